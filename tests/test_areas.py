"""Every area is wired through its manifest (svc/manifest.py), and nothing an area owns is left out:
a package under svc.domains without a manifest in svc/areas.py, a job kind its area's manifest does
not declare, a
phase of a project's teardown no area declares, a table whose rows would block org deletion without
any area counting them, a hint for an error code that does not exist: each fails here."""

from __future__ import annotations

import importlib
import pkgutil

from sqlalchemy import ForeignKey

import svc.domains
from svc.app import build_registry
from svc.areas import AREAS
from svc.errors import AppError
from svc.jobs.registry import JobRegistry
from svc.models import Base, TeardownPhase
from svc.settings import Settings
from tests.support.config import configured


def test_every_area_package_has_its_manifest_in_the_list() -> None:
    packages = {m.name for m in pkgutil.iter_modules(svc.domains.__path__) if m.ispkg}
    listed = [area.name for area in AREAS]
    assert len(listed) == len(set(listed)), "an area is listed twice"
    assert set(listed) == packages
    for area in AREAS:
        manifest = importlib.import_module(f"svc.domains.{area.name}.area")
        assert manifest.AREA is area, f"svc/areas.py lists another manifest as {area.name}"


def test_every_area_registers_the_job_kinds_its_manifest_declares_and_no_other() -> None:
    """An area's kinds are its own StrEnum (domains/<area>/kinds.py), named in its manifest; its
    `jobs` registers exactly those, and no value is another area's."""
    seen: dict[str, str] = {}
    for area in AREAS:
        registry = JobRegistry()
        if area.jobs is not None:
            area.jobs(registry, configured(Settings()))
        declared = {kind.value for kind in area.job_kinds} if area.job_kinds is not None else set()
        assert set(registry.specs) == declared, f"{area.name} registers other kinds than its manifest declares"
        for value in declared:
            assert value not in seen, f"{value!r} is a kind of both {seen[value]} and {area.name}"
            seen[value] = area.name
    assert set(build_registry(Settings()).specs) == set(seen)


def test_every_phase_of_a_project_teardown_is_declared_by_an_area() -> None:
    """Operations runs the phases and names no area: each phase's work is the steps the areas
    register (svc.jobs.registry.TeardownStep); a phase nobody declares would do nothing."""
    registry = build_registry(Settings())
    assert {step.phase for step in registry.teardown} == set(TeardownPhase) - {TeardownPhase.done}


def test_every_table_an_org_cannot_be_deleted_with_is_counted_as_a_holding() -> None:
    """Rows whose org_id is ON DELETE RESTRICT would make org deletion fail in the store: some
    area must declare them in its manifest's holdings, so the org is refused with org_not_empty
    listing them instead."""
    declared = {holding.model.__table__.name for area in AREAS for holding in area.holdings}  # type: ignore[attr-defined]
    blocking = set()
    for table in Base.metadata.tables.values():
        for column in table.columns:
            for key in column.foreign_keys:
                assert isinstance(key, ForeignKey)
                if key.column.table.name == "orgs" and (key.ondelete or "NO ACTION").upper() in ("RESTRICT",
                                                                                                 "NO ACTION"):
                    blocking.add(table.name)
    assert blocking, "no table holds an org's rows?"
    assert blocking == declared


def _codes(cls: type[AppError]) -> set[str]:
    found = {cls.code}
    for sub in cls.__subclasses__():
        found |= _codes(sub)
    return found


def test_every_hint_is_for_an_error_code_that_exists() -> None:
    for module in pkgutil.walk_packages(svc.__path__, "svc."):
        if not module.name.startswith("svc.cli"):
            importlib.import_module(module.name)
    codes = _codes(AppError)
    for area in AREAS:
        for code in area.hints:
            assert code in codes, f"{area.name} hints at {code!r}, which no error has"
