"""docs/architecture.md's claims that can drift, held by the code: outside the areas, only the list
of areas and the edge's component import an area ("no other central module names an area"; the
operator's commands are the areas' own, declared in their manifests), and the picture's supervised
processes are the components' (tests/test_component_declarations.py)."""

from __future__ import annotations

from pathlib import Path

import grimp

DOC = Path(__file__).resolve().parent.parent / "docs" / "architecture.md"
# Each with why it may: the list of areas; the edge's routing source, composed of two areas'.
MAY_IMPORT_AREAS = {"svc.areas", "svc.edge.component"}


def test_outside_the_areas_only_the_list_the_edge_and_the_operator_import_an_area() -> None:
    graph = grimp.build_graph("svc", include_external_packages=False)
    importers = {importer for area in graph.find_children("svc.domains")
                 for module in {area} | graph.find_descendants(area)
                 for importer in graph.find_modules_that_directly_import(module)
                 if not importer.startswith("svc.domains.")}
    assert importers == MAY_IMPORT_AREAS
    for module in MAY_IMPORT_AREAS:
        assert f"src/{module.replace('.', '/')}.py" in DOC.read_text(), f"docs/architecture.md does not name {module}"
