"""`svc admin`: operator commands, run on the server beside `svc serve`, against its state store
(the same SVC_DATA_DIR or SVC_DATABASE_URL). Not an API client: they need the store, not a login,
so only someone who can read the server's settings can run them. Loaded only when `svc admin` runs.

Each area declares its commands in its manifest (`admin`: domains/<area>/admin.py) and does its
work through the Operator below (svc/admin.py); this module names no area. Today:

    svc admin plan ORG pro|free     set an org's plan (orgs; self-hosted instances without billing)
    svc admin certs list            the TLS certificates svc holds (certificates; also `svc certs`)
    svc admin certs trust           trust svc's local CA (SVC_TLS_ISSUER=local) where curl and
                                    Chromium look (svc/operator/trust.py: this machine, not the store)
    svc admin billing events|replay|reconcile   the billing webhooks received, and repairs (billing)
    svc admin credit ORG AMOUNT --reason R      adjust an org's AI credit (ai; a ledger row)
    svc admin ai overruns|resume    models whose provider billed more than svc held (ai)
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import typer

from svc.app import server_context
from svc.areas import AREAS
from svc.operator import trust
from svc.settings import Settings
from svc.uow import Tx, UnitOfWork, unit_of_work

T = TypeVar("T")

app = typer.Typer(name="admin", no_args_is_help=True, add_completion=False, rich_markup_mode=None)


@app.callback()
def _group() -> None:
    """Operator commands, run on the server against its state store (SVC_DATA_DIR or
    SVC_DATABASE_URL, as for svc serve)."""


class ServerStore:
    """The Operator the areas' commands run with: each `run` is a unit of work on the store of the
    settings svc serve reads (the environment), with the adapters it builds (the fake Polar of the
    `svc serve` beside it, when SVC_BILLING=fake)."""

    def run(self, work: Callable[[UnitOfWork], Awaitable[T]], policy: Tx = Tx.WRITE) -> T:
        async def in_store() -> T:
            async with server_context(Settings()) as ctx, unit_of_work(ctx, policy) as uow:
                return await work(uow)

        return asyncio.run(in_store())


for area in AREAS:
    if area.admin is not None:
        area.admin(app, ServerStore())



def _group_of(name: str) -> typer.Typer:
    """The `svc admin NAME` group an area added."""
    found = next((group.typer_instance for group in app.registered_groups if group.name == name), None)
    if found is None:
        raise LookupError(f"no area adds `svc admin {name}`")
    return found


# `svc certs` is `svc admin certs`; its `trust` works on this machine's trust stores, not the store.
certs_app = _group_of("certs")
certs_app.command("trust")(trust.trust)
