"""Components declare themselves (svc/supervisor/component.py, svc/components.py): every system in
the adapters is a declared component, every package that runs a supervised process declares one,
and the serving process starts them after what each names and stops them in reverse."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import re
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from svc import components
from svc.context import Adapters
from svc.settings import Settings
from svc.supervisor.component import Component, Launch, start_order
from tests.support.config import configured

SRC = Path(__file__).resolve().parent.parent / "src" / "svc"


def test_every_system_in_the_adapters_is_a_declared_component() -> None:
    slots = {c.slot for c in components.COMPONENTS if c.slot is not None}
    fields = {f.name for f in dataclasses.fields(Adapters)} - {"off"}
    assert fields == slots, f"Adapters fields no component fills: {fields - slots}; slots of no field: {slots - fields}"
    names = [c.name for c in components.COMPONENTS]
    assert len(names) == len(set(names))


def test_every_package_that_supervises_a_process_declares_its_component() -> None:
    """A package that runs a program under the supervisor has a component.py, and every
    component.py's COMPONENT is in svc/components.py's list."""
    supervising = set()
    for path in SRC.rglob("*.py"):
        if "svc/supervisor/" not in str(path) and re.search(r"\bSupervisor\(|\bnginx_spec\(", path.read_text()):
            parts = path.relative_to(SRC.parent).parts
            supervising.add(".".join(parts[:3]) if parts[1] == "adapters" else ".".join(parts[:2]))
    declaring = {".".join(p.parent.relative_to(SRC.parent).parts): p for p in SRC.rglob("component.py")
                 if p.parent.name != "supervisor"}
    assert supervising and not supervising - set(declaring), f"no component.py: {supervising - set(declaring)}"
    for package in declaring:
        declared = importlib.import_module(f"{package}.component").COMPONENT
        assert any(declared is listed for listed in components.COMPONENTS), f"{package}'s component is not listed"


def _recording(name: str, log: list[str], after: tuple[str, ...] = ()) -> Component:
    @contextlib.asynccontextmanager
    async def start(ctx: Any, launch: Launch) -> AsyncIterator[None]:
        log.append(f"start {name}")
        try:
            yield
        finally:
            log.append(f"stop {name}")

    return Component(name=name, start=start, after=after)


async def test_the_serving_process_starts_after_what_each_names_and_stops_in_reverse(
        monkeypatch: pytest.MonkeyPatch) -> None:
    log: list[str] = []
    declared = (_recording("edge", log, after=("workers",)), _recording("workers", log), _recording("dns", log))
    monkeypatch.setattr(components, "COMPONENTS", declared)
    ctx = SimpleNamespace(adapters=SimpleNamespace(), settings=Settings(data_dir=Path("/nonexistent")))
    async with contextlib.AsyncExitStack() as running:
        await components.start(ctx, Launch(api_url="http://127.0.0.1:1"), running)  # type: ignore[arg-type]
        assert log == ["start workers", "start edge", "start dns"]
    assert log[3:] == ["stop dns", "stop edge", "stop workers"]


def test_a_cycle_or_an_unknown_name_in_after_is_refused() -> None:
    log: list[str] = []
    with pytest.raises(ValueError, match="cycle"):
        start_order([_recording("a", log, after=("b",)), _recording("b", log, after=("a",))])
    with pytest.raises(ValueError, match="no component"):
        start_order([_recording("a", log, after=("nothing",))])


def test_the_banner_and_the_preflight_come_from_the_components(tmp_path: Path) -> None:
    settings = configured(Settings(data_dir=tmp_path), dns_enabled=False, edge_enabled=False, billing="off")
    labels = [line.label for line in components.banner(settings, Launch(api_url="http://127.0.0.1:8080"))]
    assert {"mail", "edge", "https", "databases", "billing", "ai", "git", "dns", "hostnames"} <= set(labels)
    assert components.preflight(settings) is None
    adapters = components.build_adapters(configured(settings))
    assert adapters.off["nameserver"].startswith("off (SVC_DNS_ENABLED=false)")
    assert adapters.off["billing"].startswith("off (SVC_BILLING=off)")


def test_the_architecture_picture_names_every_supervised_process() -> None:
    """docs/architecture.md's picture draws an arrow from the supervisor to each program a component
    runs, and to nothing else."""
    doc = (SRC.parent.parent / "docs" / "architecture.md").read_text()
    picture = doc[doc.index("```mermaid"):doc.index("```", doc.index("```mermaid") + 3)]
    labels = dict(re.findall(r'(\w+)\["([^"]+)"\]', picture))
    supervised = [labels.get(node, node) for node in
                  re.findall(r'^\s*supervisor(?:\["[^"]*"\])? -->(?:\|"[^"]*"\|)? (\w+)', picture, re.MULTILINE)]
    declared = [name for c in components.COMPONENTS for name in c.processes]
    for name in declared:
        assert any(name in label for label in supervised), f"the picture has no supervisor arrow to {name}"
    for label in supervised:
        assert any(name in label for name in declared), f"the picture supervises {label!r}, which no component runs"
