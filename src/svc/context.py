"""What a running svc holds: settings, the state store and the adapters. Built once in create_app."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from svc.db import Database
from svc.settings import Settings

if TYPE_CHECKING:
    from svc.adapters.idp.port import IdentityProvider
    from svc.adapters.mail.port import MailSender


@dataclass
class Adapters:
    mail: MailSender
    idp: IdentityProvider | None = None


@dataclass
class AppContext:
    settings: Settings
    db: Database
    adapters: Adapters
    # Name of this process, used by job leases ("host:pid:random").
    worker_name: str = field(default="")
