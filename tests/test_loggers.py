"""One logger convention in svc (docs/architecture.md): a module logs to a logger named, literally,
after its area or system ("svc.dns", "svc.git"), never `__name__`: log lines group by what they are
about (an area's service, queries and jobs under one name), and the names people filter on do not
move when a file does."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "svc"
# Other libraries' loggers svc configures (a level, a filter), never logs to.
CONFIGURED = {"uvicorn.access", "uvicorn.error", "aiosqlite", "httpx", "asyncssh"}


def test_every_logger_is_named_svc_and_its_area_or_system() -> None:
    wrong = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "getLogger" and node.args):
                continue
            name = node.args[0]
            literal = name.value if isinstance(name, ast.Constant) and isinstance(name.value, str) else None
            if literal is None or not (literal == "svc" or literal.startswith("svc.") or literal in CONFIGURED):
                wrong.append(f"{path.relative_to(SRC.parent)}:{node.lineno}: getLogger({ast.unparse(name)})")
    assert not wrong, "loggers are named \"svc.<area or system>\", literally:\n" + "\n".join(wrong)
