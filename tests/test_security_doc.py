"""docs/security.md names the test that holds each line of the threat model: every test it cites
exists, so a renamed or deleted test cannot leave a line of the model held by nothing."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CITED = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


def _tests_in(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {node.name for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_")}


def test_every_test_the_threat_model_cites_exists() -> None:
    text = (ROOT / "docs" / "security.md").read_text()
    cited = CITED.findall(text)
    assert len(cited) >= 30, "the threat model cites its tests as `tests/<file>.py::<test>`"
    missing = [f"{file}::{name}" for file, name in cited
               if not (ROOT / file).is_file() or name not in _tests_in(ROOT / file)]
    assert not missing, f"docs/security.md cites tests that do not exist: {missing}"
