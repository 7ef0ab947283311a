"""What a running svc holds: settings, the state store, the adapters (one port per external system)
and the few app-wide things use cases reach through their unit of work. Built once at start; no
module keeps state of an app in a global (AppContext.state_of)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy.orm import InstrumentedAttribute

from svc.db import Database
from svc.models import Base
from svc.settings import Config, Own, OwnSettings, Settings, own_settings

if TYPE_CHECKING:
    from svc.adapters.acme.port import AcmeFactory
    from svc.adapters.ai.port import Upstream
    from svc.adapters.billing.port import BillingProvider, PaidOrder
    from svc.adapters.blobs.port import BlobStore
    from svc.adapters.database.port import DatabaseNode
    from svc.adapters.edge.port import Edge
    from svc.adapters.git.port import GitNode
    from svc.adapters.idp.port import IdentityProvider
    from svc.adapters.mail.port import MailSender
    from svc.adapters.mail_relay.port import MailRelay
    from svc.adapters.nameserver.port import Nameserver
    from svc.adapters.objects.port import ObjectStore
    from svc.adapters.registrar.port import Registrar
    from svc.adapters.resolver.port import Resolver
    from svc.adapters.smtp_server.port import SmtpServer
    from svc.adapters.workers.port import WorkerRuntime
    from svc.kit.crypto import Keyring
    from svc.kit.store_session import StoreSession
    from svc.models import Project


@dataclass
class Adapters:
    mail: MailSender
    # The relay the projects' mail goes out through (SMTP, or .eml files without SVC_SMTP_RELAY_URL);
    # None only until the serving process fills it from the settings.
    relay: MailRelay | None = None
    idp: IdentityProvider | None = None
    # None: the default, files under SVC_DATA_DIR/blobs (or S3 when configured), made at start.
    blobs: BlobStore | None = None
    # The projects' objects (env.storage, the storage routes): files under SVC_DATA_DIR/objects, or
    # an S3 bucket (SVC_STORAGE_BACKEND); None only until the serving process fills it at start.
    objects: ObjectStore | None = None
    # The authoritative nameserver (PowerDNS); None: DNS is not configured (the DNS routes answer
    # 503 dns_not_configured). An external one is built with the adapters; the managed one is set
    # once `svc serve` has started it.
    nameserver: Nameserver | None = None
    # DNS resolution for custom hostnames' ownership checks; None: built from the settings at start.
    resolver: Resolver | None = None
    # The worker runtime (workerd), started with the edge by `svc serve`; None: workers do not run
    # on this svc (a deploy records its worker unchecked; docs/workers.md).
    runtime: WorkerRuntime | None = None
    # The PostgreSQL cluster of the projects' databases; None: projects get no database here (the
    # database routes answer 503; `off["database"]` says why).
    database: DatabaseNode | None = None
    # Certificates over ACME: makes the client for the stored account key; None: SVC_ACME_DIRECTORY_URL
    # is unset (the edge serves http only).
    acme: AcmeFactory | None = None
    # The billing provider (Polar, or the fake Polar `svc serve` runs with SVC_BILLING=fake); None:
    # billing is off (the billing routes answer 501 billing_off; plans come from `svc admin plan`).
    billing: BillingProvider | None = None
    # The registrar domains are bought through (DNSimple, or the fake `svc serve` runs with
    # SVC_REGISTRAR=fake); None: buying and checking answer 503 registrar_not_configured.
    registrar: Registrar | None = None
    # The git node projects' repositories live on (local.py: this machine's disk and git CLI);
    # None: git hosting is off or git is not installed (the repository routes answer 503).
    git: GitNode | None = None
    # svc's inbound SMTP server (in this process), receiving the projects' mail; None: SVC_SMTP_PORT
    # is 0 (no inbound mail).
    smtp: SmtpServer | None = None
    # The AI upstream of each lane ("frontier", "value") that has one configured.
    ai: dict[str, Upstream] = field(default_factory=dict)
    # Why a port above is None, in `svc serve`'s words, by its name ("nameserver"): what an area's
    # pages tell people when its routes answer 503.
    off: dict[str, str] = field(default_factory=dict)


Kept = TypeVar("Kept")

# What an area puts in a project's worker env (docs/workers.md, "Bindings"): name -> value (text,
# or a JSON value), read when the runtime loads the project's worker. Absent when not granted.
BindingSource = Callable[["StoreSession", "AppContext", "Project"], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class ProjectResource:
    """A resource a bundle's svc.json may declare (`"ai": true`), offered by the area that grants it,
    declared in its manifest: whether a project has it (the ProjectOverview's `provisioned`, the
    dashboard's Overview), and how a person grants it, in the dashboard and with the CLI."""

    name: str  # svc.json's key: "db", "ai"
    binding: str  # what the project's worker gets: "env.db"
    what: str  # in a few words, for the Overview
    granted: Callable[[StoreSession, Project], Awaitable[bool]]
    command: str  # the CLI's, `{project}` standing for the project's name: "svc ai grant --project {project}"
    tab: str  # the project's tab where it is granted ("/ai"), whose form posted to that address grants it
    button: str  # that form's button: "Grant AI"
    # Why this svc cannot grant it now (its component off), in `svc serve`'s words; None: it can.
    off: Callable[[AppContext], str | None] | None = None


# What a paid one-time order (the billing provider's order.paid) means to an area, applied in the
# webhook's transaction: (outcome, detail) for the billing inbox ("applied", "ignored", "failed"),
# or None when the order is not the area's. Its first argument is the webhook's UnitOfWork (svc.uow,
# a layer above this module: named here as Any).
OrderHandler = Callable[[Any, "PaidOrder"], Awaitable["tuple[str, str] | None"]]
# What an area repairs of an org when the billing provider is reconciled (a paid order whose
# webhook was lost, credited): given the context and the org's id, it opens its own units of work and
# asks the provider with nothing of the store held.
Reconciler = Callable[["AppContext", str], Awaitable[Any]]


@dataclass(frozen=True)
class Unsettled:
    """Money the billing provider took whose effect in svc did not follow (a paid order of AI credit
    refused: paid less than its tier), for the operator's billing page until it is settled."""

    at: datetime
    org_slug: str | None
    reference: str  # the provider's id of what was paid (an order)
    paid_cents: int | None
    currency: str
    why: str
    # What the operator does about it, in words (refund it at the provider, credit it by hand).
    settle: str


# What an area lists of its unsettled money (Unsettled), newest first, from the store.
UnsettledSource = Callable[["StoreSession"], Awaitable["list[Unsettled]"]]


@dataclass(frozen=True)
class OrgHolding:
    """Rows an org holds that block its deletion (their org_id is ON DELETE RESTRICT), declared by
    the area that owns them in its manifest: org deletion counts them and names a few (`name`)."""

    kind: str
    model: type[Base]
    name: InstrumentedAttribute[str]


@dataclass
class AppContext:
    settings: Settings
    db: Database
    adapters: Adapters
    # Name of this process, used by job leases ("host:pid:random").
    worker_name: str = field(default="")
    # Seals secrets and signs edge cookies (kit/crypto.py); set at start.
    keyring: Keyring | None = None
    # The web server in front, when this process runs one (svc serve does; most tests do not).
    edge: Edge | None = None
    # Set after a commit that enqueued jobs: this process's worker looks for work at once.
    jobs_waiting: asyncio.Event = field(default_factory=asyncio.Event)
    # What orgs hold in every area, from the areas' manifests (svc/areas.py).
    holdings: tuple[OrgHolding, ...] = ()
    # What every area puts in a project's worker env, from the areas' manifests.
    bindings: tuple[BindingSource, ...] = ()
    # What paid orders mean to the areas, from their manifests (billing's webhook asks each).
    orders: tuple[OrderHandler, ...] = ()
    # What the billing reconcile asks the areas to repair of an org, from their manifests.
    reconcilers: tuple[Reconciler, ...] = ()
    # What money the areas took without its effect, from their manifests (the operator's billing page).
    unsettled: tuple[UnsettledSource, ...] = ()
    # The resources a bundle may declare that the areas grant (env.db, env.ai), from their manifests.
    resources: tuple[ProjectResource, ...] = ()

    async def reconcile_areas(self, org_id: str) -> None:
        """The areas' part of a billing reconcile of the org (AI credit: paid orders never credited)."""
        for reconcile in self.reconcilers:
            await reconcile(self, org_id)
    # The areas' and the components' own settings, read once at start, by their class.
    own_settings: dict[type[OwnSettings], OwnSettings] = field(default_factory=dict)
    # What a module keeps between calls, one object of each class (state_of): this app's own, so
    # two apps in one process (the tests run several) share none of it.
    kept: dict[type[Any], Any] = field(default_factory=dict, repr=False)

    def state_of(self, kind: type[Kept]) -> Kept:
        """This app's `kind` (made with no arguments at its first use): what a module would
        otherwise keep in a global (the AI gateway's settlements under way, the sites' stamps)."""
        found = self.kept.get(kind)
        if found is None:
            found = self.kept[kind] = kind()
        return found

    @property
    def config(self) -> Config:
        """The shared settings and the parts' own, as the components read them."""
        return Config(self.settings, self.own_settings)

    def settings_of(self, kind: type[Own]) -> Own:
        """An area's or a component's own settings (its settings.py), as read when svc started
        (looked up directly: a route may ask several times per request)."""
        return own_settings(self.own_settings, kind)

    @property
    def keys(self) -> Keyring:
        if self.keyring is None:
            raise RuntimeError("the keyring is set when the app starts")
        return self.keyring

    @property
    def blobs(self) -> BlobStore:
        if self.adapters.blobs is None:
            raise RuntimeError("the blob store is set when the app starts")
        return self.adapters.blobs

    @property
    def objects(self) -> ObjectStore:
        if self.adapters.objects is None:
            raise RuntimeError("the object store is set when the app starts")
        return self.adapters.objects
