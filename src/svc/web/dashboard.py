"""The dashboard as the areas make it: each area's manifest (svc/manifest.py) brings its page
routes, its templates, its error hints, its links in the navigation and what it adds to every
page's frame. svc.web knows no area: it is handed them by svc.app (`install_dashboard`) and reads
them through `DashboardArea`, the part of a manifest it needs."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from fastapi import APIRouter, Request
from jinja2 import ChoiceLoader, Environment, FileSystemLoader, PrefixLoader, select_autoescape
from markupsafe import Markup, escape

from svc.auth.caller import Principal
from svc.kit.clock import human_date, relative, rfc3339, utcnow
from svc.kit.ids import short_request_id
from svc.models import Role

TEMPLATES = Path(__file__).parent / "templates"

# What an area adds to the frame of every page (base.html's values), for who is looking.
FramePart = Callable[[Request, Principal | None], Awaitable[Mapping[str, Any]]]


class Place(StrEnum):
    """Where a navigation link stands."""

    # The org's pages (the left navigation): path after /orgs/<slug>.
    org = "org"
    # A project's tabs: path after /orgs/<slug>/projects/<name> ("" is the overview).
    project = "project"
    # The signed-in person's own pages: an absolute path.
    account = "account"
    # The operator pages (SVC_OPERATORS only), shown beside the account's: an absolute path.
    operator = "operator"


@dataclass(frozen=True)
class NavLink:
    place: Place
    label: str
    path: str
    # Position among the links of its place (areas number theirs 10 apart).
    order: int
    # The org role a person needs for the link to be shown (a page a role cannot open is not offered).
    role: Role = Role.viewer
    # Also the current page at the org's own address, /orgs/<slug> (the org's first page).
    at_org_root: bool = False


class DashboardArea(Protocol):
    """What the dashboard reads of an area's manifest."""

    @property
    def name(self) -> str: ...
    @property
    def pages(self) -> Sequence[APIRouter]: ...
    @property
    def templates(self) -> Path | None: ...
    @property
    def hints(self) -> Mapping[str, str]: ...
    @property
    def nav(self) -> Sequence[NavLink]: ...
    @property
    def frame(self) -> FramePart | None: ...


def _time(when: datetime | None) -> str:
    """<time> with the instant for machines, "3 minutes ago" for people and the date on hover."""
    if when is None:
        return "never"
    return Markup('<time datetime="{}" title="{}">{}</time>').format(
        escape(rfc3339(when)), escape(human_date(when)), escape(relative(when, utcnow())))


def _environment(areas: Sequence[DashboardArea]) -> Environment:
    """svc/web/templates (the frame, the shared macros, error pages) and each area's templates,
    named "<area>/<file>"."""
    own = {area.name: FileSystemLoader(area.templates) for area in areas if area.templates is not None}
    env = Environment(loader=ChoiceLoader([FileSystemLoader(TEMPLATES), PrefixLoader(own)]),
                      autoescape=select_autoescape(default=True), auto_reload=False, trim_blocks=True,
                      lstrip_blocks=True)
    env.filters["ago"] = _time
    env.filters["short"] = lambda digest, n=12: (digest or "")[:n]
    env.filters["request_id"] = short_request_id
    return env


class Dashboard:
    """The installed dashboard (app.state.dashboard): templates, hints, navigation and frame parts."""

    def __init__(self, areas: Sequence[DashboardArea], hints: Mapping[str, str]) -> None:
        self.env = _environment(areas)
        merged = dict(hints)
        for area in areas:
            for code, hint in area.hints.items():
                if code in merged:
                    raise ValueError(f"the hint for {code!r} is declared twice (area {area.name})")
                merged[code] = hint
        self.hints: Mapping[str, str] = merged
        links = sorted((link for area in areas for link in area.nav), key=lambda link: link.order)
        self.nav: dict[str, list[NavLink]] = {place.value: [link for link in links if link.place is place]
                                              for place in Place}
        self.frame_parts = [area.frame for area in areas if area.frame is not None]
