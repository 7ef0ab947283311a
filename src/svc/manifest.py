"""What an area declares about itself, in one place: its manifest, `domains/<area>/area.py`,
exporting `AREA = Area(...)`. svc.app (routes, jobs, holdings) and svc.web (pages, templates,
navigation, hints) loop over the list of areas in svc/areas.py; no other central module names an
area (docs/architecture.md, "How to add an area"). tests/test_areas.py fails when a job kind, a
teardown phase, an org's holding or an error's hint is not declared by the area it belongs to."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

import typer
from fastapi import APIRouter
from starlette.types import Scope

from svc.admin import Operator
from svc.context import (
    AppContext,
    BindingSource,
    OrderHandler,
    OrgHolding,
    ProjectResource,
    Reconciler,
    UnsettledSource,
)
from svc.jobs.registry import JobRegistry
from svc.settings import AreaSettings, Config
from svc.web.dashboard import FramePart, NavLink

__all__ = ["Area", "BindingSource", "FramePart", "NavLink", "OrgHolding", "ProjectResource"]


@dataclass(frozen=True)
class Area:
    # The package's name under svc.domains; its dashboard templates are named "<name>/<file>".
    name: str
    # Its /v1 routes, and the routes the edge calls (svc.deps.api_router()).
    routers: Sequence[APIRouter] = ()
    # Routes that exist only while SVC_ENABLE_DEV_AUTH is on.
    dev_routers: Sequence[APIRouter] = ()
    # Its dashboard pages (svc.web.routing.page_router()), the folder of their templates, and its
    # links in the navigation.
    pages: Sequence[APIRouter] = ()
    templates: Path | None = None
    nav: Sequence[NavLink] = ()
    # What it adds to every dashboard page's frame (the org switcher's orgs).
    frame: FramePart | None = None
    # Error code -> what a person does next, where the message alone leaves them stuck (dashboard).
    hints: Mapping[str, str] = field(default_factory=dict)
    # Registers its job kinds and periodic cycles, each with its transaction policy, and its part
    # in the phases of a project's teardown (registry.teardown_step: operations runs them).
    jobs: Callable[[JobRegistry, Config], None] | None = None
    # Its kinds of job (domains/<area>/kinds.py, a StrEnum of its own): what `jobs` registers, no more.
    job_kinds: type[StrEnum] | None = None
    # What an org holds in this area that blocks the org's deletion.
    holdings: Sequence[OrgHolding] = ()
    # What it puts in a project's worker env (env.<NAME>, env.db ...): one source per area, read
    # when the runtime loads the worker; its change calls projects.service.bindings_changed.
    bindings: BindingSource | None = None
    # The resource of a bundle's svc.json it grants ("db", "ai"): whether a project has it, and how
    # it is granted (the project's Overview, and what `svc deploy` says is missing).
    resource: ProjectResource | None = None
    # What a paid one-time order at the billing provider means to it (AI credit bought): applied
    # once, in the transaction of the webhook that says so (domains/billing/webhooks.py).
    orders: OrderHandler | None = None
    # What the billing reconcile of an org repairs here (AI credit: a paid order whose order.paid was lost).
    reconcile: Reconciler | None = None
    # Money paid here whose effect did not follow, for the operator's billing page (AI credit: a
    # paid order refused), until the operator settles it.
    unsettled: UnsettledSource | None = None
    # Requests carrying an upload whose size the area bounds itself (exempt from the API's JSON body cap).
    uploads: Callable[[Scope], bool] | None = None
    # Its server commands (domains/<area>/admin.py): adds them to `svc admin` (commands, or a group
    # of its own), each doing its work through the Operator (svc/admin.py); loaded only when
    # `svc admin` runs.
    admin: Callable[[typer.Typer, Operator], None] | None = None
    # Its own SVC_* settings (domains/<area>/settings.py), read once at start and checked then.
    settings: type[AreaSettings] | None = None
    # What runs around the serving process's life: set up before the first request, cleaned up at
    # the end (a sweep of what a killed process left, a component the area runs).
    lifespan: Callable[[AppContext], AbstractAsyncContextManager[None]] | None = None
