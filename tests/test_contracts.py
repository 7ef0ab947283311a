"""The custom import-linter contracts of lint/ catch what they are for: each is run on a small
import graph built here, once kept and once broken the way svc could break it."""

from __future__ import annotations

import grimp
from lint.adapter_ports import AdapterPorts, breaches


def _graph(*imports: tuple[str, str], modules: tuple[str, ...] = ()) -> grimp.ImportGraph:
    graph = grimp.ImportGraph()
    for module in modules:
        graph.add_module(module)
    for importer, imported in imports:
        graph.add_module(importer)
        graph.add_module(imported)
        graph.add_import(importer=importer, imported=imported, line_number=3, line_contents=f"import {imported}")
    return graph


# A small svc: an area, an adapter with its port, a concrete backend and a face that builds it, a
# mail adapter whose face is only its port, and the supervisor.
_SVC = (
    ("app.adapters.db", "app.adapters.db.postgres"),
    ("app.adapters.db", "app.adapters.db.port"),
    ("app.adapters.db.postgres", "app.adapters.db.port"),
    ("app.adapters.db.postgres", "app.adapters.db.scram"),
    ("app.adapters.db.postgres", "app.supervisor"),
    ("app.adapters.mail", "app.adapters.mail.port"),
    ("app.domains.shop.service", "app.adapters.db.port"),
    ("app.domains.shop.service", "app.adapters.mail"),
    ("app.domains.shop.service", "app.kit"),
)
_MODULES = ("app", "app.adapters", "app.domains", "app.domains.shop")


def _check(*extra: tuple[str, str]) -> list[tuple[str, str]]:
    graph = _graph(*_SVC, *extra, modules=_MODULES)
    sources = {m for m in graph.modules if m.startswith("app.domains")}
    return [(b.importer, b.imported) for b in breaches(graph, adapters="app.adapters", port="port", sources=sources,
                                                       forbidden={"app.supervisor"})]


def test_an_area_may_import_a_port_and_a_face_that_is_only_its_port() -> None:
    assert _check() == []


def test_an_area_importing_a_concrete_module_of_any_adapter_breaks_it() -> None:
    # Nothing lists app.adapters.db.scram: the adapter is found in the graph.
    assert _check(("app.domains.shop.service", "app.adapters.db.scram")) == [
        ("app.domains.shop.service", "app.adapters.db.scram")]
    # A face that builds the concrete adapter is wiring, not a face (and leads on to the supervisor).
    assert _check(("app.domains.shop.jobs", "app.adapters.db")) == [
        ("app.domains.shop.jobs", "app.adapters.db"), ("app.domains.shop.jobs", "app.supervisor")]


def test_a_port_that_imports_a_concrete_module_breaks_it() -> None:
    assert _check(("app.adapters.mail.port", "app.adapters.db.scram")) == [
        ("app.adapters.mail.port", "app.adapters.db.scram")]


def test_a_forbidden_package_reached_through_a_chain_breaks_it() -> None:
    assert _check(("app.adapters.db.port", "app.adapters.db.postgres")) == [
        ("app.adapters.db.port", "app.adapters.db.postgres"),
        ("app.domains.shop.service", "app.supervisor")]


def test_the_contract_reads_its_options_as_import_linter_hands_them() -> None:
    options = {"adapters": "app.adapters", "port": "port", "source_modules": ["app.domains.**"],
               "forbidden_modules": ["app.supervisor"]}
    contract = AdapterPorts("ports", {}, options)
    assert contract.check(_graph(*_SVC, modules=_MODULES), verbose=False).kept
    broken = contract.check(_graph(*_SVC, ("app.domains.shop", "app.adapters.db.postgres"), modules=_MODULES),
                            verbose=False)
    assert not broken.kept
