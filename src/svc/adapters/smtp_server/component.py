"""The inbound SMTP server as a component: built when SVC_SMTP_PORT is set, told its Mailbox by the
email area's lifespan, and started in svc's own process (an asyncio server beside the API: it needs
nothing a separate process would isolate, and delivers straight into the area's unit of work)."""

from __future__ import annotations

import contextlib
import errno
from collections.abc import AsyncIterator
from typing import Any

from svc.adapters.resolver.dns import DnsResolver
from svc.adapters.smtp_server.server import InboundSmtpServer
from svc.adapters.smtp_server.settings import SmtpServerSettings
from svc.kit.hosts import local_address
from svc.settings import Config
from svc.supervisor import host_port
from svc.supervisor.component import Component, Launch, Line


class SmtpPortInUse(Exception):
    def __init__(self, address: str) -> None:
        super().__init__(address)
        self.address = address


def build(config: Config) -> InboundSmtpServer | None:
    settings = config.settings_of(SmtpServerSettings)
    if not settings.smtp_port:
        return None
    return InboundSmtpServer(settings, tmp_dir=config.settings.tmp_dir())


def _address(config: Config) -> str:
    settings = config.settings_of(SmtpServerSettings)
    return host_port(local_address(settings.smtp_host), settings.smtp_port)


@contextlib.asynccontextmanager
async def _start(ctx: Any, launch: Launch) -> AsyncIterator[None]:
    server: InboundSmtpServer | None = ctx.adapters.smtp
    if server is None:
        yield
        return
    resolver = ctx.adapters.resolver
    try:
        await server.start(resolver=resolver.blocking() if isinstance(resolver, DnsResolver) else None)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise SmtpPortInUse(_address(ctx.config)) from exc
        raise
    try:
        yield
    finally:
        await server.stop()


def _off(config: Config) -> str | None:
    return None if config.settings_of(SmtpServerSettings).smtp_port else "no inbound mail (SVC_SMTP_PORT is 0)"


def _banner(config: Config, launch: Launch) -> list[Line]:
    settings = config.settings_of(SmtpServerSettings)
    if not settings.smtp_port:
        return [Line("smtp", "off: no inbound mail (set SVC_SMTP_PORT, and SVC_MAIL_DOMAIN, to receive the "
                             "projects' mail)")]
    tls = ("STARTTLS with SVC_SMTP_TLS_CERT" if settings.smtp_tls_cert
           else "STARTTLS with the edge's certificate for its name when svc holds one")
    return [Line("smtp", f"receiving the projects' mail on {_address(config)} ({tls}; at most "
                         f"{settings.smtp_max_message_bytes} bytes a message)")]


def _explain(exc: Exception) -> str:
    assert isinstance(exc, SmtpPortInUse)
    return f"the SMTP port {exc.address} is in use; stop what uses it or choose another with SVC_SMTP_PORT"


COMPONENT = Component(name="smtp", settings=SmtpServerSettings, slot="smtp", build=build, fill=True, off=_off,
                      start=_start, after=("resolver",), banner=_banner, explains={SmtpPortInUse: _explain})
