"""docs/settings.md, generated: every SVC_* variable svc reads, from the code that reads it (the
shared Settings, each component's and each area's own settings class), with its default and the comment above it.

    python -m lint.settings_table > docs/settings.md

tests/test_settings_doc.py fails when docs/settings.md and this output differ: a setting added,
renamed or re-described in the code shows up in the docs in the same change."""

from __future__ import annotations

import ast
import inspect
import textwrap
from pathlib import Path

from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from svc.areas import AREAS
from svc.components import COMPONENTS
from svc.settings import OwnSettings, Settings

ROOT = Path(__file__).resolve().parents[1]

HEADER = """# Settings

Every `SVC_*` variable svc reads, generated from the code that reads it (`python -m
lint.settings_table > docs/settings.md`; `tests/test_settings_doc.py` fails when this page and the
code differ). The shared settings come first, then each component's own (`settings.py` beside its
adapter), then each area's rules (`domains/<area>/settings.py`); all are read once when svc starts:
a bad value stops `svc serve` with one line naming the variable.
"""


def _comments(cls: type) -> dict[str, str]:
    """The comment lines right above each field of `cls`, joined (a comment block above a group of
    fields describes the first of them)."""
    source = textwrap.dedent(inspect.getsource(cls))
    lines = source.splitlines()
    found: dict[str, str] = {}
    for node in ast.parse(source).body[0].body:  # type: ignore[attr-defined]
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            said: list[str] = []
            at = node.lineno - 2
            while at >= 0 and lines[at].strip().startswith("#"):
                said.insert(0, lines[at].strip().lstrip("#").strip())
                at -= 1
            found[node.target.id] = " ".join(said)
    return found


def _default(info: FieldInfo) -> str:
    if info.default is PydanticUndefined or info.default is None:
        return "(none)" if info.default_factory is None else "(made)"
    value = info.default
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, Path):
        # A default beside the code (an area's catalog) is named from the checkout, wherever it is.
        if value.is_absolute() and value.is_relative_to(ROOT):
            value = value.relative_to(ROOT)
        return f"`{value}`"
    return f"`{getattr(value, 'value', value)}`"


def _rows(cls: type[Settings] | type[OwnSettings]) -> list[str]:
    said = _comments(cls)
    rows = []
    for name, info in cls.model_fields.items():
        words = said.get(name, "").replace("|", "\\|")
        rows.append(f"| `SVC_{name.upper()}` | {_default(info)} | {words} |")
    return rows


def _where(cls: type) -> str:
    return str(Path(inspect.getfile(cls)).resolve().relative_to(ROOT))


def _section(title: str, cls: type[Settings] | type[OwnSettings]) -> list[str]:
    return ["", f"## {title} (`{_where(cls)}`)", "", "| Variable | Default | What it is |", "|---|---|---|",
            *_rows(cls)]


def table() -> str:
    out = [HEADER.rstrip("\n"), *_section("Shared", Settings)]
    for component in sorted((c for c in COMPONENTS if c.settings is not None), key=lambda c: c.name):
        assert component.settings is not None
        out += _section(f"Component: {component.name}", component.settings)
    for area in sorted((a for a in AREAS if a.settings is not None), key=lambda a: a.name):
        assert area.settings is not None
        out += _section(f"Area: {area.name}", area.settings)
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    print(table(), end="")
