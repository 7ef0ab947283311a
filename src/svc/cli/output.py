"""What a command prints: the API's JSON with `--json` (and nothing else on stdout), else Rich tables.

Errors, prompts, hints and progress go to stderr, so stdout stays clean for pipes. Rich is imported
when something is drawn, not when a command module is loaded (`--json` and errors never load it).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, TextIO, TypeVar

import typer

from svc.cli.client import CliError

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderableType
    from rich.progress import Progress
    from rich.text import Text

JsonFlag = Annotated[bool, typer.Option("--json", help="Print the API's JSON (machine-readable) and nothing else.")]

PIPE_WIDTH = 240  # stdout or stderr is not a terminal and COLUMNS is not set: rows are not cut at 80
GAP = 2  # columns of blank between two table columns


T = TypeVar("T")

def width_for(stream: TextIO) -> int | None:
    """COLUMNS when set, else the terminal's width (None: Rich asks it), else PIPE_WIDTH."""
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    return None if tty else PIPE_WIDTH


def _console(stderr: bool) -> Console:
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    return Console(file=stream, highlight=False, soft_wrap=False, width=width_for(stream))


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
    if isinstance(message, str):
        sys.stdout.write(message + "\n")
        sys.stdout.flush()
        return
    out().print(message, soft_wrap=True)


def note(message: str | Text) -> None:
    """One line on stderr: progress, warnings, hints (plain text is written as it is, never as markup)."""
    if isinstance(message, str):
        sys.stdout.flush()
        sys.stderr.write(message + "\n")
        sys.stderr.flush()
        return
    err().print(message, soft_wrap=True)


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


def transfer_bar(verb: str) -> Progress:
    """A progress bar in bytes on stderr, for an upload or a download: `verb`, the bar, the bytes
    done of all, the speed (once it is known: a small transfer ends before, and shows no "?") and
    the time left (the time taken, once done)."""
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )
    from rich.text import Text

    class Speed(TransferSpeedColumn):
        def render(self, task: Any) -> Text:
            return super().render(task) if (task.finished_speed or task.speed) is not None else Text("")

    return Progress(TextColumn(verb), BarColumn(), DownloadColumn(), Speed(),
                    TimeRemainingColumn(elapsed_when_finished=True), console=err())


def confirm(yes: bool, as_json: bool, question: str, what: str, nothing: str) -> None:
    """Ask `question` (y/N) unless --yes; --json never asks, so it needs --yes (`what` the command
    would do); a no is CliError `nothing` (cancelled)."""
    if yes:
        return
    if as_json:
        raise CliError(f"--json asks nothing: add --yes to {what}", "confirm_needed")
    if ask(f"{question} [y/N] ").strip().lower() not in ("y", "yes"):
        raise CliError(nothing, "cancelled")


Shrink = Mapping[str, int] | Sequence[Mapping[str, int]]


class FitTable:
    """A table that fits the width it is drawn in, one line per row.

    Every cell stays on one line. When the columns do not fit, those named in `shrink` (free text:
    messages, names, emails) are cut with an ellipsis, the widest first, each down to its minimum
    width; `shrink` may be a list of such maps, cut one after the other (the first until its
    columns are at their minimums, then the next). Before that, the `optional` columns are left
    out, in their order, while the table would not fit with each shrinkable column at twice its
    minimum. The other columns (ids, versions, digests, times, URLs) keep their whole content."""

    def __init__(self, columns: Sequence[str], rows: list[list[Text]], shrink: Shrink,
                 optional: Sequence[str]) -> None:
        self.columns = list(columns)
        self.rows = rows
        self.tiers = [dict(shrink)] if isinstance(shrink, Mapping) else [dict(t) for t in shrink]
        self.optional = [c for c in optional if c in self.columns]

    def widths(self, max_width: int) -> dict[str, int]:
        """The width of every column shown (the left-out ones are missing)."""
        natural = {c: max([len(c), *(row[i].cell_len for row in self.rows)]) for i, c in enumerate(self.columns)}
        least = {c: natural[c] for c in self.columns}
        for tier in self.tiers:
            least.update({c: min(natural[c], m) for c, m in tier.items() if c in natural})
        roomy = {c: min(natural[c], 2 * least[c]) for c in self.columns}
        shown = list(self.columns)
        hidden = iter(self.optional)
        while sum(roomy[c] for c in shown) + GAP * (len(shown) - 1) > max_width:
            drop = next(hidden, None)
            if drop is None:
                break
            shown.remove(drop)
        widths = {c: natural[c] for c in shown}
        excess = sum(widths.values()) + GAP * (len(shown) - 1) - max_width
        for tier in self.tiers:
            while excess > 0:  # the widest first: cut them down to the next width, together
                cuttable = [c for c in tier if c in widths and widths[c] > least[c]]
                if not cuttable:
                    break
                top = max(widths[c] for c in cuttable)
                widest = [c for c in cuttable if widths[c] == top]
                floor = max([least[c] for c in widest] + [widths[c] for c in cuttable if widths[c] < top])
                each = min(top - floor, -(-excess // len(widest)))
                for c in widest:
                    cut = min(each, excess)
                    widths[c] -= cut
                    excess -= cut
        # Still too wide (a terminal narrower than the columns that are never cut): Rich squeezes
        # every column evenly, and the cells are cut with an ellipsis.
        return widths

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[RenderableType]:
        from rich import box
        from rich.table import Table

        widths = self.widths(options.max_width)
        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, GAP - 1, 0, 0))
        for c in self.columns:
            if c in widths:
                table.add_column(c, width=widths[c], no_wrap=True, overflow="ellipsis")
        for row in self.rows:
            table.add_row(*(cell for c, cell in zip(self.columns, row, strict=True) if c in widths))
        yield table


def table(columns: Sequence[str], rows: Iterable[Sequence[Any]], *, empty: str = "Nothing to show.",
          shrink: Shrink = (), optional: Sequence[str] = ()) -> FitTable | Text:
    """Rows for people, fitted to the width (see FitTable); `empty` when there are none."""
    from rich.text import Text

    cells = [[_one_line(v) for v in row] for row in rows]
    if not cells:
        return Text(empty, style="dim")
    return FitTable(columns, cells, shrink, optional)


def cell(value: Any) -> Text:
    """User data is shown as text, never read as Rich markup."""
    from rich.text import Text

    if value is None:
        return Text("-", style="dim")
    if isinstance(value, bool):
        return Text("yes" if value else "no")
    if isinstance(value, Text):
        return value
    return Text(str(value))


def _one_line(value: Any) -> Text:
    """A table cell: on one line, cut with an ellipsis when its column is narrower."""
    text = cell(value)
    if "\n" in text.plain:
        text = text.copy()
        text.plain = text.plain.replace("\r", "").replace("\n", " ")
    text.no_wrap, text.overflow = True, "ellipsis"
    return text


def when(ts: Any) -> str | None:
    """`2026-01-02T03:04:05.678Z` -> `2026-01-02 03:04 UTC` (anything else is shown as it came)."""
    if not isinstance(ts, str):
        return None
    try:
        parsed = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return ts
    return parsed.strftime("%Y-%m-%d %H:%M UTC")


def emit_line(as_json: bool, data: Any, *parts: str | tuple[str, str]) -> None:
    """`--json`: the data as JSON; otherwise one line for people, from plain parts and (text, style) parts."""
    if as_json:
        print_json(data)
        return
    from rich.text import Text

    out().print(Text.assemble(*parts), soft_wrap=True)


def wait_for(status: str, check: Callable[[], T | None], *, timeout: float, late: str,
             every: float = 1.0) -> T:
    """Ask `check` every `every` seconds, a spinner saying `status`, until it gives something (its
    value); after `timeout` seconds, CliError `late` (code timeout)."""
    import time

    from svc.cli.client import CliError

    deadline = time.monotonic() + timeout
    with err().status(status):
        while True:
            found = check()
            if found is not None:
                return found
            if time.monotonic() > deadline:
                raise CliError(late, "timeout")
            time.sleep(every)
