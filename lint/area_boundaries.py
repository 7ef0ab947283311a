"""An import-linter contract for every area, present and future: areas keep their insides.

A module of an area (`svc.domains.<area>.<module>`) may be imported from outside its area only if it
is the area's `service`, `schemas` or `errors`; its manifest (`area`) is imported only by the list
of areas (`svc.areas`). Everything else an area has (its queries, router, pages, jobs, helpers) is
its own. The areas are found in the import graph, so a new area is covered without anyone adding it.
"""

from __future__ import annotations

from dataclasses import dataclass

import grimp
from importlinter import Contract, ContractCheck, fields, output


@dataclass(frozen=True)
class Breach:
    importer: str
    imported: str
    lines: tuple[int, ...]


class AreaBoundaries(Contract):
    """Options: `areas` (the package holding the areas), `public` (the modules others may import),
    `manifest` and `manifest_importer` (the manifest, and the one module that may import it)."""

    type_name = "area_boundaries"

    areas = fields.StringField()
    public = fields.ListField(subfield=fields.StringField())
    manifest = fields.StringField()
    manifest_importer = fields.StringField()

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        root = str(self.areas)
        public = {str(name) for name in self.public}  # type: ignore[attr-defined]
        breaches: list[Breach] = []
        for area in sorted(graph.find_children(root)):
            for module in sorted({area} | graph.find_descendants(area)):
                if module == area:
                    continue
                name = module.removeprefix(area + ".").split(".", 1)[0]
                if name in public:
                    continue
                allowed = {str(self.manifest_importer)} if name == str(self.manifest) else set()
                for importer in sorted(graph.find_modules_that_directly_import(module)):
                    if importer == area or importer.startswith(area + ".") or importer in allowed:
                        continue
                    details = graph.get_import_details(importer=importer, imported=module)
                    breaches.append(Breach(importer, module, tuple(d["line_number"] for d in details)))
        return ContractCheck(kept=not breaches, metadata={"breaches": breaches})

    def render_broken_contract(self, check: ContractCheck) -> None:
        output.print_error(f"Only {', '.join(str(p) for p in self.public)} of an area may be "  # type: ignore[attr-defined]
                           f"imported from outside it:", bold=False)
        output.new_line()
        for breach in check.metadata["breaches"]:
            output.print_error(f"- {breach.importer} -> {breach.imported} (l.{', '.join(map(str, breach.lines))})",
                               bold=False)
        output.new_line()
