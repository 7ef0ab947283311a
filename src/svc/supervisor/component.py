"""What a component declares about itself, beside its adapter, as an area does in its manifest: a
component is an external system svc talks to or runs (the mail server, PowerDNS, PostgreSQL,
workerd, nginx, a billing provider ...). Each adapter package exports `COMPONENT = Component(...)`
from its `component.py`; svc/components.py lists them, and svc.app (the adapters, the serving
process's start and stop), svc.running and `svc serve` (its checks, its banner, the start-up errors
it explains) loop over that list: no central module names a component (docs/architecture.md,
"Components").

Domain-free, as the supervisor is: the app's context is handed to `start` as Any (it lives in a layer
above the adapters)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any

from svc.settings import ComponentSettings, Config


@dataclass(frozen=True)
class Launch:
    """What the serving process asks of its components: where its API is reached (nginx, workerd and
    a fake provider's webhooks call it there), and which components may start processes of their
    own (`svc serve`: all; a test: those it needs)."""

    api_url: str
    processes: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Line:
    """A line of `svc serve`'s banner: its label, its words, and whether it is printed in red (`alarm`:
    the component is off and should not be, or runs unsafely)."""

    label: str
    text: str
    alarm: bool = False


@dataclass(frozen=True)
class Component:
    # Its name: the banner's label, the key of Adapters.off, what `after` and Launch.processes name.
    name: str
    # The field of context.Adapters it fills (None: it fills none of its own).
    slot: str | None = None
    # Its own settings (settings.py beside its adapter), read when svc starts and checked then.
    settings: type[ComponentSettings] | None = None
    # The adapter built from the settings when svc starts (None: off, or made by `start`).
    build: Callable[[Config], Any] | None = None
    # Built in the serving process when whoever made the adapters left it empty (a test's Adapters).
    fill: bool = False
    # Why it is off, in the banner's words (None: on); kept in Adapters.off for the area's pages.
    off: Callable[[Config], str | None] | None = None
    # What it starts with the serving process (supervised processes, a fake provider), once the
    # components named in `after` have started; it puts its adapter in its slot, ready (its own
    # readiness probe has passed), and takes it out and stops everything as the context exits.
    start: Callable[[Any, Launch], AbstractAsyncContextManager[None]] | None = None
    # For an operator's command beside a running `svc serve` (`svc admin ...`): fills its slot of the
    # Adapters when `build` left it empty because the serving process starts the adapter's server
    # (the fake Polar), for as long as the command runs.
    beside: Callable[[Config, Any], AbstractAsyncContextManager[None]] | None = None
    after: Sequence[str] = ()
    # The programs it runs under the supervisor, as docs/architecture.md's picture names them.
    processes: Sequence[str] = ()
    # Checked before anything starts: why svc cannot start (a port another program holds), in one line.
    preflight: Callable[[Config], str | None] | None = None
    # Its lines in `svc serve`'s banner.
    banner: Callable[[Config, Launch], Sequence[Line]] | None = None
    # The start-up errors it explains in one line instead of a traceback: type -> the line.
    explains: Mapping[type[Exception], Callable[[Exception], str]] = field(default_factory=dict)


@contextlib.asynccontextmanager
async def holding(ctx: Any, slot: str, adapter: Any, stop: Callable[[], Awaitable[Any]]) -> AsyncIterator[None]:
    """What a component's `start` does with what it started: its adapter in its slot while the
    serving process runs, then out of the slot (nothing reaches it any more) and stopped."""
    setattr(ctx.adapters, slot, adapter)
    try:
        yield
    finally:
        setattr(ctx.adapters, slot, None)
        await stop()


def start_order(components: Sequence[Component]) -> list[Component]:
    """The components in an order that starts each after those it names in `after` (the list's
    order otherwise); a cycle or an unknown name is a mistake in the declarations."""
    by_name = {c.name: c for c in components}
    ordered: list[Component] = []
    placing: set[str] = set()

    def place(component: Component) -> None:
        if component in ordered:
            return
        if component.name in placing:
            raise ValueError(f"the components' `after` makes a cycle through {component.name}")
        placing.add(component.name)
        for name in component.after:
            if name not in by_name:
                raise ValueError(f"component {component.name} starts after {name!r}, which is no component")
            place(by_name[name])
        placing.discard(component.name)
        ordered.append(component)

    for component in components:
        place(component)
    return ordered
