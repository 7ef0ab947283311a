"""Every component of svc, one line each (svc/supervisor/component.py says what a component
declares, beside its adapter): what svc.app builds the adapters from, what the serving process
starts in order and stops in reverse, what `svc serve` checks before it starts, prints in its banner
and explains when start-up fails. Adding a component: its folder (its adapter and component.py),
one line here, and its field in context.Adapters (docs/architecture.md, "Components")."""

from __future__ import annotations

import contextlib

from svc.adapters.acme.component import COMPONENT as acme
from svc.adapters.ai.component import COMPONENT as ai
from svc.adapters.billing.component import COMPONENT as billing
from svc.adapters.blobs.component import COMPONENT as blobs
from svc.adapters.database.component import COMPONENT as database
from svc.adapters.git.component import COMPONENT as git
from svc.adapters.idp.component import COMPONENT as idp
from svc.adapters.mail.component import COMPONENT as mail
from svc.adapters.mail_relay.component import COMPONENT as mail_relay
from svc.adapters.nameserver.component import COMPONENT as nameserver
from svc.adapters.objects.component import COMPONENT as objects
from svc.adapters.registrar.component import COMPONENT as registrar
from svc.adapters.resolver.component import COMPONENT as resolver
from svc.adapters.smtp_server.component import COMPONENT as smtp
from svc.adapters.social_fake.component import COMPONENT as social_fake
from svc.adapters.workers.component import COMPONENT as workers
from svc.context import Adapters, AppContext
from svc.edge.component import COMPONENT as edge
from svc.settings import ComponentSettings, Config
from svc.supervisor.component import Component, Launch, Line, start_order

# The banner's order; the start order follows each component's `after`.
COMPONENTS: tuple[Component, ...] = (
    mail, mail_relay, idp, blobs, objects, edge, workers, acme, database, billing, ai, registrar, git, nameserver,
    resolver, smtp, social_fake,
)


SETTINGS: tuple[type[ComponentSettings], ...] = tuple(c.settings for c in COMPONENTS if c.settings is not None)


def build_adapters(config: Config) -> Adapters:
    """Each component's adapter as its settings make it (None: off, or started later), and why
    those that are off are."""
    built = {c.slot: c.build(config) for c in COMPONENTS if c.slot is not None and c.build is not None}
    off = {c.name: why for c in COMPONENTS if c.off is not None and (why := c.off(config)) is not None}
    return Adapters(**built, off=off)


def fill(ctx: AppContext) -> None:
    """The adapters whoever made them left out that a component fills (a test's Adapters), built
    before anything runs (the areas' lifespans use them)."""
    for component in COMPONENTS:
        if component.fill and component.slot and component.build and getattr(ctx.adapters, component.slot) is None:
            setattr(ctx.adapters, component.slot, component.build(ctx.config))


async def start(ctx: AppContext, launch: Launch, running: contextlib.AsyncExitStack) -> None:
    """The components of the serving process, each after those it names, on `running` (which stops
    them in reverse)."""
    for component in start_order(COMPONENTS):
        if component.start is not None:
            await running.enter_async_context(component.start(ctx, launch))


async def beside(config: Config, adapters: Adapters, running: contextlib.AsyncExitStack) -> None:
    """The adapters of the `svc serve` this command runs beside (svc admin), for as long as `running`."""
    for component in COMPONENTS:
        if component.beside is not None and component.slot and getattr(adapters, component.slot) is None:
            await running.enter_async_context(component.beside(config, adapters))


def preflight(config: Config) -> str | None:
    """Why svc cannot start (a port another program holds), checked before anything starts."""
    return next((why for c in COMPONENTS if c.preflight is not None and (why := c.preflight(config))), None)


def banner(config: Config, launch: Launch) -> list[Line]:
    return [line for c in COMPONENTS if c.banner is not None for line in c.banner(config, launch)]


def explain(exc: BaseException) -> str | None:
    """A start-up error a component explains, in its one line (None: not one of theirs)."""
    for component in COMPONENTS:
        for kind, words in component.explains.items():
            if isinstance(exc, kind) and isinstance(exc, Exception):
                return words(exc)
    return None


EXPLAINED: tuple[type[Exception], ...] = tuple(kind for c in COMPONENTS for kind in c.explains)
