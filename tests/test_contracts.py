"""The custom import-linter contracts of lint/ catch what they are for: each is run on a small
import graph built here, once kept and once broken the way svc could break it."""

from __future__ import annotations

import tomllib
from pathlib import Path

import grimp
from lint.adapter_ports import AdapterPorts, breaches
from lint.area_layers import AreaLayers
from lint.area_layers import breaches as area_breaches


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


def _areas(*imports: tuple[str, str]) -> list[str]:
    graph = _graph(*imports, modules=("app", "app.domains", "app.domains.orgs", "app.domains.shop",
                                      "app.domains.mail", "app.domains.ads"))
    return [b.why for b in area_breaches(graph, root="app.domains", core=["mail", "orgs"])]


def test_areas_importing_each_other_in_one_direction_keep_it() -> None:
    assert _areas(("app.domains.orgs.service", "app.domains.mail.service"),
                  ("app.domains.shop.service", "app.domains.orgs.service"),
                  ("app.domains.ads.service", "app.domains.shop.schemas")) == []


def test_a_cycle_between_areas_breaks_it_however_long() -> None:
    # Nothing lists ads or shop: a feature area is any area not in `core`.
    assert _areas(("app.domains.shop.service", "app.domains.ads.service"),
                  ("app.domains.ads.jobs", "app.domains.shop.schemas")) == ["a cycle between areas: ads, shop"]
    assert _areas(("app.domains.shop.service", "app.domains.ads.service"),
                  ("app.domains.ads.service", "app.domains.orgs.service"),
                  ("app.domains.orgs.service", "app.domains.shop.schemas")) == [
        "a cycle between areas: ads, orgs, shop", "the core area orgs imports the feature area shop"]


def test_a_core_area_importing_above_it_breaks_it() -> None:
    assert _areas(("app.domains.mail.service", "app.domains.orgs.service")) == [
        "the core area mail imports orgs, a core area above it"]


def test_an_ignored_import_is_left_out_of_the_check() -> None:
    options = {"areas": "app.domains", "core": ["orgs"],
               "ignore_imports": ["app.domains.orgs.service -> app.domains.shop.service"]}
    graph = _graph(("app.domains.shop.service", "app.domains.orgs.service"),
                   ("app.domains.orgs.service", "app.domains.shop.service"),
                   modules=("app", "app.domains", "app.domains.orgs", "app.domains.shop"))
    assert AreaLayers("areas", {}, options).check(graph, verbose=False).kept
    options["ignore_imports"] = []
    assert not AreaLayers("areas", {}, options).check(graph, verbose=False).kept


def test_svc_has_no_cycle_between_areas() -> None:
    """grimp's own count (the imports to remove for the areas to be acyclic) is 0, and the contract
    ignores nothing: a new cycle fails here as well as in lint-imports."""
    config = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    [layers] = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "area_layers"]
    assert not layers.get("ignore_imports")
    graph = grimp.build_graph("svc", include_external_packages=False)
    assert graph.nominate_cycle_breakers("svc.domains") == set()
