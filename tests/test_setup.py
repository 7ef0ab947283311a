"""`make setup` (scripts/bootstrap.sh, which `make run` and `make test` run first) says each step as it
starts and how long it took: a first run takes minutes and used to say nothing meanwhile. Run here
on this checkout, which is set up already: dpkg answers that every package is installed and npm is a
stub (npm ci would empty node_modules under the running suite, and may need the network); uv sync
and the nginx module's build are the real ones, with nothing to do."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STEPS = ("Python packages", "npm packages", "the edge's nginx module")


def _bootstrap(stubs: Path, npm_status: int) -> subprocess.CompletedProcess[str]:
    stubs.mkdir(exist_ok=True)
    for name, status in (("dpkg", 0), ("npm", npm_status)):
        stub = stubs / name
        stub.write_text(f"#!/bin/sh\nexit {status}\n")
        stub.chmod(0o755)
    env = os.environ | {"PATH": f"{stubs}:{os.environ['PATH']}"}
    return subprocess.run([str(ROOT / "scripts" / "bootstrap.sh")], env=env, capture_output=True, text=True,
                          timeout=600, stdin=subprocess.DEVNULL)


def test_setup_says_each_step_and_how_long_it_took(tmp_path: Path) -> None:
    done = _bootstrap(tmp_path / "bin", 0)
    assert done.returncode == 0, done.stdout + done.stderr
    said = done.stdout.splitlines()
    # Its own lines only: the tools run quietly.
    assert all(line.startswith("setup: ") for line in said), said
    assert said[0].startswith("setup: Debian packages: all ") and said[0].endswith(" installed"), said
    for step in STEPS:
        starts = [i for i, line in enumerate(said) if line.startswith(f"setup: {step} (") and line.endswith(" ...")]
        ends = [i for i, line in enumerate(said) if re.fullmatch(rf"setup: {re.escape(step)}: done in \d+s", line)]
        assert len(starts) == len(ends) == 1 and starts[0] + 1 == ends[0], (step, said)
    assert re.fullmatch(r"setup: all done in \d+s", said[-1]), said


def test_a_failing_step_is_named_and_stops_the_setup(tmp_path: Path) -> None:
    done = _bootstrap(tmp_path / "bin", 3)
    assert done.returncode == 3, done.stdout + done.stderr
    assert re.search(r"^setup: npm packages: failed after \d+s \(exit status 3\)$", done.stderr, re.MULTILINE), \
        done.stderr
    assert "nginx module" not in done.stdout and "all done" not in done.stdout, done.stdout
