"""The relay as a component (svc/supervisor/component.py): SMTP when SVC_SMTP_RELAY_URL is set, else
.eml files under SVC_DATA_DIR/mail-out, so a local svc sends offline."""

from __future__ import annotations

from svc.adapters.mail.eml import EmlDirectorySender
from svc.adapters.mail.smtp import SmtpSender
from svc.adapters.mail_relay.port import MailRelay
from svc.adapters.mail_relay.settings import RelaySettings
from svc.settings import Config
from svc.supervisor.component import Component, Launch, Line


def build(config: Config) -> MailRelay:
    url = config.settings_of(RelaySettings).smtp_relay_url
    if url:
        return SmtpSender(url, setting="SVC_SMTP_RELAY_URL")
    return EmlDirectorySender(config.settings.data_dir / "mail-out")


def _banner(config: Config, launch: Launch) -> list[Line]:
    return [Line("mail relay", f"projects' mail: {build(config).description}")]


COMPONENT = Component(name="mail_relay", settings=RelaySettings, slot="relay", build=build, fill=True,
                      banner=_banner)
