"""The README is the front door: what it shows must exist. Every `svc ...` command in its examples
is a real command, every file it points to is there, and its two commands are the Makefile's."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
SVC = str(Path(sys.executable).parent / "svc")


def _example_commands() -> list[list[str]]:
    """The `svc` commands of the README's shell blocks, as words up to the first argument."""
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", README, re.S):
        for line in block.splitlines():
            line = line.split("#", 1)[0].strip()
            if "svc " not in line:
                continue
            words = line[line.index("svc "):].split()[1:]
            commands.append([w for w in words[:2] if re.fullmatch(r"[a-z-]+", w)])
    return commands


def test_every_svc_command_in_the_readme_exists() -> None:
    commands = _example_commands()
    assert len(commands) >= 10, commands
    for words in commands:
        # A group and its subcommand, or a command and its first argument: the longest that has help.
        for n in (2, 1):
            r = subprocess.run([SVC, *words[:n], "--help"], capture_output=True, text=True, timeout=60)
            if r.returncode == 0:
                break
        assert r.returncode == 0, f"svc {' '.join(words)}: {r.stderr}"


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
