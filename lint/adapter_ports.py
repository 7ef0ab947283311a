"""An import-linter contract for every adapter, present and future: the rest of svc depends on
ports, never on a concrete adapter.

The adapters are the packages under `adapters` (`svc.adapters.<x>`), found in the import graph, so
a new one is covered without anyone listing its modules. Of an adapter, the checked modules
(`source_modules`: the areas, the manifest, the dashboard's frame, auth, jobs, the unit of work)
may import only:

- its port, `svc.adapters.<x>.port` (a `Protocol` and its value types, in svc's words);
- its settings, `svc.adapters.<x>.settings` (the component's own settings class, which some areas
  read: whether DNS is on, the git SSH port), a leaf like the port;
- its package face, `svc.adapters.<x>` (its `__init__.py`), only while the face is a face of the
  port: it imports nothing of its own package but the port. A face that builds the concrete
  adapters (`build_billing`, `start_database`: most of them) is wiring, for svc.app alone;
- the root `svc.adapters`, while it imports no concrete module either.

A port (or a face) that imports a concrete module of any adapter is itself a breach: the checked
modules would reach the concrete through it. Every other module of an adapter is its own.

`forbidden_modules` (the edge's nginx, the supervisor) may not be reached from the checked modules
at all, directly or through a chain of imports.
"""

from __future__ import annotations

from dataclasses import dataclass

import grimp
from importlinter import Contract, ContractCheck, fields, output
from importlinter.domain.helpers import module_expressions_to_modules


@dataclass(frozen=True)
class Breach:
    importer: str
    imported: str
    lines: tuple[int, ...]
    # Through which modules, for a forbidden module reached by a chain.
    chain: tuple[str, ...] = ()


def faces(graph: grimp.ImportGraph, adapters: str, port: str, settings: str = "settings") -> set[str]:
    """What of the adapters others may import: each adapter's port and its settings (the component's
    own settings class, which areas read), its package face while that imports nothing of its
    package but those, and the root package while it imports no concrete module."""
    ports = {f"{adapter}.{name}" for adapter in graph.find_children(adapters) for name in (port, settings)}
    ports &= set(graph.modules)
    allowed = set(ports)
    for adapter in graph.find_children(adapters):
        own = {m for m in graph.find_modules_directly_imported_by(adapter) if m.startswith(adapter + ".")}
        if own <= ports:
            allowed.add(adapter)
    below = {m for m in graph.find_modules_directly_imported_by(adapters) if m.startswith(adapters + ".")}
    if below <= allowed:
        allowed.add(adapters)
    return allowed


def _lines(graph: grimp.ImportGraph, importer: str, imported: str) -> tuple[int, ...]:
    return tuple(d["line_number"] for d in graph.get_import_details(importer=importer, imported=imported))


def breaches(graph: grimp.ImportGraph, *, adapters: str, port: str, sources: set[str],
             forbidden: set[str]) -> list[Breach]:
    allowed = faces(graph, adapters, port)
    found: list[Breach] = []
    # The checked modules import only ports and faces; a port or a face imports no concrete module.
    for importer in sorted(sources | allowed):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            if imported.startswith(adapters + ".") and imported not in allowed:
                found.append(Breach(importer, imported, _lines(graph, importer, imported)))
    # The forbidden modules are not reached at all, even through a chain.
    for module in sorted(forbidden):
        if module not in graph.modules:
            continue
        for importer in sorted(graph.find_downstream_modules(module, as_package=True) & sources):
            chain = graph.find_shortest_chain(importer=importer, imported=module, as_packages=True) or ()
            found.append(Breach(importer, module, (), tuple(chain)))
    return found


class AdapterPorts(Contract):
    """Options: `adapters` (the package holding the adapters), `port` (the name of an adapter's port
    module), `source_modules` (module expressions: `svc.domains.**`) and `forbidden_modules`
    (packages the source modules may not reach at all)."""

    type_name = "adapter_ports"

    adapters = fields.StringField()
    port = fields.StringField()
    source_modules = fields.ListField(subfield=fields.ModuleExpressionField())
    forbidden_modules = fields.ListField(subfield=fields.StringField(), required=False, default=[])

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        sources = {m.name for m in module_expressions_to_modules(graph, self.source_modules)}  # type: ignore[attr-defined]
        found = breaches(graph, adapters=str(self.adapters), port=str(self.port), sources=sources,
                         forbidden={str(m) for m in self.forbidden_modules})  # type: ignore[attr-defined]
        return ContractCheck(kept=not found, metadata={"breaches": found})

    def render_broken_contract(self, check: ContractCheck) -> None:
        output.print_error(f"Outside {self.adapters}, only an adapter's {self.port} (or a face that is only "
                           f"its port) may be imported; {', '.join(map(str, self.forbidden_modules))} not "  # type: ignore[attr-defined]
                           f"at all:", bold=False)
        output.new_line()
        for breach in check.metadata["breaches"]:
            where = (f" (l.{', '.join(map(str, breach.lines))})" if breach.lines
                     else f" (through {' -> '.join(breach.chain)})")
            output.print_error(f"- {breach.importer} -> {breach.imported}{where}", bold=False)
        output.new_line()
