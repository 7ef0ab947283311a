"""What a command prints: the API's JSON with `--json` (and nothing else on stdout), else Rich tables.

Errors, prompts, hints and progress go to stderr, so stdout stays clean for pipes.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from svc.cli.client import CliError

JsonFlag = Annotated[bool, typer.Option("--json", help="Print the API's JSON (machine-readable) and nothing else.")]


def _console(stderr: bool) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    # Not a terminal (a pipe, a file): do not wrap table rows at 80 columns.
    width = None if stream.isatty() else 240
    return Console(file=stream, highlight=False, soft_wrap=False, width=width)


def out() -> Console:
    return _console(stderr=False)


def err() -> Console:
    return _console(stderr=True)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def emit(as_json: bool, data: Any, render: Callable[[Console], None]) -> None:
    """`--json`: the data as JSON; otherwise `render` draws it for people."""
    if as_json:
        print_json(data)
    else:
        render(out())


def say(message: str | Text) -> None:
    """One line for people on stdout (only ever called when not in --json mode)."""
    out().print(message if isinstance(message, Text) else Text(message), soft_wrap=True)


def note(message: str | Text) -> None:
    """One line on stderr: progress, warnings, hints."""
    err().print(message if isinstance(message, Text) else Text(message), soft_wrap=True)


def ask(prompt: str) -> str:
    """Ask on stderr, read one line from stdin (stdout stays untouched, even for --json)."""
    sys.stderr.write(prompt)
    sys.stderr.flush()
    line = sys.stdin.readline()
    if not sys.stdin.isatty():
        sys.stderr.write("\n")
    if not line:
        raise CliError("No answer on standard input (use --yes in scripts)", "aborted")
    return line.rstrip("\r\n")


def table(columns: Sequence[str], rows: Iterable[Sequence[Any]], *, empty: str = "Nothing to show.") -> Table | Text:
    t = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for c in columns:
        t.add_column(c, overflow="fold")
    count = 0
    for row in rows:
        t.add_row(*(cell(v) for v in row))
        count += 1
    return t if count else Text(empty, style="dim")


def cell(value: Any) -> Text:
    """User data is shown as text, never read as Rich markup."""
    if value is None:
        return Text("-", style="dim")
    if isinstance(value, bool):
        return Text("yes" if value else "no")
    if isinstance(value, Text):
        return value
    return Text(str(value))


def when(ts: Any) -> str | None:
    """`2026-01-02T03:04:05.678Z` -> `2026-01-02 03:04 UTC` (anything else is shown as it came)."""
    if not isinstance(ts, str):
        return None
    try:
        parsed = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return ts
    return parsed.strftime("%Y-%m-%d %H:%M UTC")
