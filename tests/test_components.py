"""A component `make test` needs that is missing is a skip on a developer's machine and a failure
in CI (SVC_TESTS_REQUIRE_COMPONENTS, set by .ci/run): tests/support/components.py, driven through a
real pytest run of a small suite whose components no machine has."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.components import REQUIRE

ROOT = Path(__file__).resolve().parent.parent

SUITE = '''
import pytest

from tests.support.components import absent, needs

GONE = needs("a component no machine has", False)
HERE = needs("python", True)


@GONE
def test_gone():
    pass


@HERE
def test_here():
    pass


@pytest.fixture
def server():
    absent("a server no machine has")


def test_server(server):
    pass
'''


def _run(tmp_path: Path, required: str | None) -> tuple[dict[str, str], str]:
    """Each test's outcome (passed, skipped, failed, error) and the run's words."""
    (tmp_path / "test_suite.py").write_text(SUITE)
    env = {k: v for k, v in os.environ.items() if k != REQUIRE and not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = str(ROOT)
    if required is not None:
        env[REQUIRE] = required
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.support.components", "-p", "no:cacheprovider", "-v", "-rA",
         "--rootdir", str(tmp_path), str(tmp_path / "test_suite.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    said = done.stdout + done.stderr
    outcomes = {}
    for line in said.splitlines():
        words = line.split()
        if len(words) >= 2 and words[0].startswith("test_suite.py::test_"):
            outcomes[words[0].removeprefix("test_suite.py::test_")] = words[1]
    return outcomes, said


def test_a_missing_component_is_a_skip_by_default(tmp_path: Path) -> None:
    outcomes, said = _run(tmp_path, None)
    assert outcomes == {"gone": "SKIPPED", "here": "PASSED", "server": "SKIPPED"}, said
    assert "a component no machine has is not installed" in said


def test_a_missing_component_fails_when_components_are_required(tmp_path: Path) -> None:
    outcomes, said = _run(tmp_path, "1")
    # Failed before the test runs, as its fixtures are set up: pytest counts both as errors.
    assert outcomes == {"gone": "ERROR", "here": "PASSED", "server": "ERROR"}, said
    assert "a component no machine has is not installed" in said and REQUIRE in said
    assert "a server no machine has is not installed" in said
    # Set to something that is not yes, it is off.
    outcomes, said = _run(tmp_path, "0")
    assert outcomes == {"gone": "SKIPPED", "here": "PASSED", "server": "SKIPPED"}, said


def test_ci_requires_the_components() -> None:
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert lines.index(f"export {REQUIRE}=1") < lines.index("make test")
