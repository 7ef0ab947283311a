"""The README is the front door: what it shows must exist. Every `svc ...` command in its examples
parses as the CLI parses it (its group, command, options and arguments), every file it points to is
there, and its two commands are the Makefile's."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import typer
from typer.core import TyperGroup

from svc.cli.main import VERBS, build, groups
from svc.operator import admin, commands

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
# Where a command line stops being svc's: a pipe, a redirection, a comment.
_SHELL_END = re.compile(r"\s(?:\||<<<|<|>|2>|#)\s")


def _example_commands() -> list[list[str]]:
    """The `svc` command lines of the README's shell blocks, as the words svc is given."""
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", README, re.S):
        for line in block.splitlines():
            start = re.search(r"(?:^|\|\s*)svc\s", line)
            if start is None:
                continue
            words = _SHELL_END.split(line[start.end():] + " ", maxsplit=1)[0]
            commands.append(shlex.split(words))
    return commands


class DoesNotParse(Exception):
    pass


def _parse(words: list[str]) -> None:
    """Parse the words as `svc` would, without running anything: every group and command named must
    exist and take the options and arguments given; DoesNotParse with click's words otherwise."""
    app = build([*VERBS, *groups()])
    if "serve" not in {c.name for c in app.registered_commands}:
        commands.register(app)  # the server's commands, as the console script adds them
    command = typer.main.get_command(app)
    ctx = command.context_class(command, info_name="svc")
    rest = list(words)
    while isinstance(command, TyperGroup):
        if not rest:
            raise DoesNotParse(f"{ctx.info_name} is a group of commands, not a command")
        name = rest.pop(0)
        found = command.get_command(ctx, name)
        if found is None:
            raise DoesNotParse(f"{ctx.info_name} has no command {name!r}")
        if name == "admin":  # passed through to the operator commands' own app
            found = typer.main.get_command(admin.app)
        command = found
        ctx = command.context_class(command, info_name=name, parent=ctx)
    try:
        command.make_context(ctx.info_name, rest, parent=ctx.parent)
    except Exception as exc:  # click's UsageError (typer's vendored click): what the user would read
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        raise DoesNotParse(f"{ctx.info_name}: {message}") from exc


def test_every_svc_command_in_the_readme_parses() -> None:
    commands = _example_commands()
    assert len(commands) >= 15, commands
    problems = []
    for words in commands:
        try:
            _parse(words)
        except DoesNotParse as exc:
            problems.append(f"svc {shlex.join(words)}: {exc}")
    assert not problems, "\n".join(problems)


def test_a_command_the_cli_does_not_have_is_caught() -> None:
    """The check above fails on what a reader would stumble on: a wrong group, subcommand, option
    or number of arguments."""
    for wrong in (["dns", "record", "set", "example.com", "www", "A", "192.0.2.1"],
                  ["dns", "dnssec", "on", "example.com", "--org", "acme", "--wiat"],
                  ["hostnames", "verify", "--project", "hello"],
                  ["rollback", "1", "2", "--project", "hello"],
                  ["admin", "plan", "acme", "gold"]):
        with pytest.raises(DoesNotParse):
            _parse(wrong)


def test_files_the_readme_names_exist() -> None:
    named = set(re.findall(r"\]\(([\w./-]+)\)", README))  # markdown links
    named |= {m for m in re.findall(r"`((?:docs|examples|src|tests|bench|scripts)/[\w./-]*)`", README)}
    named |= {"examples/site"}
    assert named, README
    for path in sorted(named):
        assert (ROOT / path).exists(), path
    assert "< key.txt" not in README


def test_the_two_commands_are_the_makefiles() -> None:
    makefile = (ROOT / "Makefile").read_text()
    for target in ("run", "test"):
        assert f"make {target}" in README
        assert re.search(rf"^{target}:", makefile, re.M), target
    assert "make test" in (ROOT / ".ci" / "run").read_text()
