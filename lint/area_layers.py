"""An import-linter contract for every area, present and future: areas depend in one direction.

An area is a package under `areas` (`svc.domains.<area>`), found in the import graph. Area `a`
depends on area `b` when a module of `a` imports a module of `b`. The contract holds when:

- no cycle runs between areas (grimp's `nominate_cycle_breakers` over the areas finds none): what
  two areas both need lives in the lower one, or the lower one offers a hook in its manifest
  (`Area.teardown`, `Area.holdings`) that the higher one declares;
- the core areas (`core`, listed from the lowest) depend only on core areas below them: a core area
  never imports a feature area (every area not in `core`), and feature areas sit above all of them.

A new area is a feature area, covered without anyone adding it. `ignore_imports` names direct imports
(`importer -> imported`) left out of the check, each a known debt to pay.
"""

from __future__ import annotations

from dataclasses import dataclass

import grimp
from importlinter import Contract, ContractCheck, fields, output


@dataclass(frozen=True)
class Breach:
    why: str
    imports: tuple[tuple[str, str, tuple[int, ...]], ...]


def area_of(module: str, root: str) -> str | None:
    if not module.startswith(root + "."):
        return None
    return module[len(root) + 1:].split(".", 1)[0]


def area_imports(graph: grimp.ImportGraph, root: str,
                 ignored: frozenset[tuple[str, str]] = frozenset()) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(area, other area) -> the module imports that make the first depend on the second."""
    found: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for area in sorted(graph.find_children(root)):
        name = area_of(area, root)
        for module in sorted({area} | graph.find_descendants(area)):
            for imported in sorted(graph.find_modules_directly_imported_by(module)):
                other = area_of(imported, root)
                if other is None or other == name or (module, imported) in ignored:
                    continue
                assert name is not None
                found.setdefault((name, other), []).append((module, imported))
    return found


def cycles(edges: dict[tuple[str, str], list[tuple[str, str]]]) -> list[list[str]]:
    """The groups of areas that depend on each other (strongly connected, two or more), sorted."""
    nodes = sorted({a for pair in edges for a in pair})
    after: dict[str, list[str]] = {n: sorted(b for (a, b) in edges if a == n) for n in nodes}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in after[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in nodes:
        if node not in index:
            visit(node)
    return sorted(groups)


def breaches(graph: grimp.ImportGraph, *, root: str, core: list[str],
             ignored: frozenset[tuple[str, str]] = frozenset()) -> list[Breach]:
    edges = area_imports(graph, root, ignored)

    def details(pairs: list[tuple[str, str]]) -> tuple[tuple[str, str, tuple[int, ...]], ...]:
        return tuple((i, m, tuple(d["line_number"] for d in graph.get_import_details(importer=i, imported=m)))
                     for i, m in pairs)

    found: list[Breach] = []
    for group in cycles(edges):
        inside = [pair for (a, b), pairs in sorted(edges.items()) if a in group and b in group for pair in pairs]
        found.append(Breach(f"a cycle between areas: {', '.join(group)}", details(inside)))
    rank = {name: i for i, name in enumerate(core)}
    for (a, b), pairs in sorted(edges.items()):
        if a not in rank:
            continue
        if b not in rank:
            found.append(Breach(f"the core area {a} imports the feature area {b}", details(pairs)))
        elif rank[b] > rank[a]:
            found.append(Breach(f"the core area {a} imports {b}, a core area above it", details(pairs)))
    return found


class AreaLayers(Contract):
    """Options: `areas` (the package holding the areas), `core` (the core areas, from the lowest;
    every other area is a feature area above them) and `ignore_imports` (`importer -> imported`)."""

    type_name = "area_layers"

    areas = fields.StringField()
    core = fields.ListField(subfield=fields.StringField())
    ignore_imports = fields.ListField(subfield=fields.StringField(), required=False, default=[])

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        ignored = frozenset(tuple(part.strip() for part in str(line).split("->", 1))
                            for line in self.ignore_imports)  # type: ignore[attr-defined]
        found = breaches(graph, root=str(self.areas), core=[str(c) for c in self.core],  # type: ignore[attr-defined]
                         ignored=ignored)  # type: ignore[arg-type]
        return ContractCheck(kept=not found, metadata={"breaches": found})

    def render_broken_contract(self, check: ContractCheck) -> None:
        output.print_error("Areas depend in one direction (core areas, from the lowest: "
                           f"{', '.join(map(str, self.core))}; feature areas above them):", bold=False)  # type: ignore[attr-defined]
        output.new_line()
        for breach in check.metadata["breaches"]:
            output.print_error(f"- {breach.why}:", bold=False)
            for importer, imported, lines in breach.imports:
                output.print_error(f"    {importer} -> {imported} (l.{', '.join(map(str, lines))})", bold=False)
        output.new_line()
