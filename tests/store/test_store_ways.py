"""The store has one way per purpose (docs/architecture.md, "The store: one way per purpose"): a use
case goes through its session, and the ways that skip the ORM session's handling of a statement
are used only on the named hot paths listed there, each with its bench figure beside it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import svc

SRC = Path(svc.__file__).parent
DOC = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
# The store's own modules: they implement the ways.
STORE = ("db.py", "kit/")
# The ways: a call of these functions, or of a `.connection()` method.
FUNCTIONS = {"plain_rows", "run_core"}
METHODS = {"connection": ".connection()"}
FIGURE = re.compile(r"bench/\w+\.py")


def _sites() -> dict[tuple[str, str, str], int]:
    """(module, enclosing function, way) -> the line of its first call."""
    found: dict[tuple[str, str, str], int] = {}
    for path in sorted(SRC.rglob("*.py")):
        module = path.relative_to(SRC).as_posix()
        if module.startswith(STORE) or module.startswith("migrations/"):
            continue
        tree = ast.parse(path.read_text(), filename=str(path))

        def visit(node: ast.AST, function: str, module: str = module) -> None:
            for child in ast.iter_child_nodes(node):
                inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                    function == "" else function
                if isinstance(child, ast.Call):
                    way = None
                    if isinstance(child.func, ast.Name) and child.func.id in FUNCTIONS:
                        way = child.func.id
                    elif isinstance(child.func, ast.Attribute) and child.func.attr in FUNCTIONS:
                        way = child.func.attr
                    elif isinstance(child.func, ast.Attribute) and child.func.attr in METHODS:
                        way = METHODS[child.func.attr]
                    if way is not None:
                        found.setdefault((module, function or "<module>", way), child.lineno)
                visit(child, inner)

        visit(tree, "")
    return found


def _listed() -> dict[tuple[str, str, str], str]:
    """The named hot paths' table: (module, function, way) -> why."""
    text = DOC.read_text()
    section = text[text.index("## The store: one way per purpose"):]
    section = section[:section.index("\n## ", 1)]
    table = section[section.index("| Module | Function | Way | Why |"):]
    rows: dict[tuple[str, str, str], str] = {}
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            break
        module, function, way, why = (cell.strip().strip("`") for cell in line.strip("|").split("|"))
        rows[(module, function, way)] = why
    return rows


def test_every_way_past_the_session_is_a_named_hot_path() -> None:
    sites, listed = _sites(), _listed()
    assert listed, "the table of named hot paths was not found in docs/architecture.md"
    unlisted = {f"{m}:{line} {f}: {w}" for (m, f, w), line in sites.items() if (m, f, w) not in listed}
    assert not unlisted, f"not a named hot path in docs/architecture.md (\"The store\"): {sorted(unlisted)}"
    gone = {f"{m} {f}: {w}" for (m, f, w) in listed if (m, f, w) not in sites}
    assert not gone, f"docs/architecture.md names hot paths the code no longer has: {sorted(gone)}"


def test_each_hot_path_carries_its_figure() -> None:
    """A hot path's comment names the bench that measured it, beside the call (a way that is not
    for speed says why in the table instead)."""
    for (module, function, way), why in _listed().items():
        if not FIGURE.search(why):
            continue  # not kept for speed: the table says what it is for
        source = (SRC / module).read_text()
        tree = ast.parse(source)
        body = next(node for node in ast.walk(tree)
                    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == function)
        text = ast.get_source_segment(source, body) or ""
        assert "bench/store.py" in text and re.search(r"\d+ us", text), \
            f"{module} {function}: no bench/store.py figure in a comment beside its {way}"
