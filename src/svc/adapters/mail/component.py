"""Mail as a component (svc/supervisor/component.py): an SMTP server when SVC_SMTP_URL is set, else
.eml files under SVC_DATA_DIR (development)."""

from __future__ import annotations

from svc.adapters.mail.eml import EmlDirectorySender
from svc.adapters.mail.port import MailSender
from svc.adapters.mail.settings import MailSettings
from svc.adapters.mail.smtp import SmtpSender
from svc.settings import Config
from svc.supervisor.component import Component, Launch, Line


def build(config: Config) -> MailSender:
    settings = config.settings_of(MailSettings)
    return SmtpSender(settings.smtp_url) if settings.smtp_url else EmlDirectorySender(config.settings.mail_dir())


def _banner(config: Config, launch: Launch) -> list[Line]:
    return [Line("mail", build(config).description)]


COMPONENT = Component(name="mail", settings=MailSettings, slot="mail", build=build, banner=_banner)
