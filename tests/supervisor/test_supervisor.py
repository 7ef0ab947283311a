"""The process supervisor with a tiny real child (a Python HTTP server): it starts once the child
answers, a port held by another program is one error and nothing runs, a missing binary is one
error, a failed start is retried, a child that dies is started again with a growing backoff and its
last words logged, stop is graceful, a child a killed svc left running is replaced (and a pid file
pointing at someone else's process is not), leftovers in a child's process group are killed, and
the child runs as the user the spec names."""

from __future__ import annotations

import asyncio
import logging
import os
import pwd
import re
import signal
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from svc.supervisor import (
    MissingBinary,
    Port,
    PortInUse,
    ProcessSpec,
    Supervisor,
    free_tcp_port,
    http_get,
    taken_port,
)
from svc.supervisor.system import alive
from tests.support.wait import WAIT_SECONDS

CHILD = r'''
import http.server, os, pathlib, signal, subprocess, sys, time

port, state = int(sys.argv[1]), pathlib.Path(sys.argv[2])
if (state / "broken").exists():
    print("loading the config", file=sys.stderr)
    print("Fatal error: the config is broken", file=sys.stderr, flush=True)
    sys.exit(3)
if (state / "with-worker").exists():
    # A worker in our process group that outlives us, as nginx's do.
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    (state / "worker.pid").write_text(str(worker.pid))


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/die":
            print("fatal: asked to exit", file=sys.stderr, flush=True)
            os._exit(7)
        body = str(os.getpid()).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def stop(*_):
    print("stopping gracefully", file=sys.stderr, flush=True)
    # A child that drains: it exits once the test lets it (a file), as long as that takes.
    while (state / "drains").exists() and not (state / "drained").exists():
        time.sleep(0.02)
    sys.exit(0)


signal.signal(signal.SIGTERM, stop)
server = http.server.HTTPServer(("127.0.0.1", port), Handler)
print(f"serving on {port}", file=sys.stderr, flush=True)
server.serve_forever()
'''


async def eventually(condition: Callable[[], Awaitable[bool]], what: str, seconds: float = WAIT_SECONDS) -> None:
    for _ in range(int(seconds / 0.05)):
        if await condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


class Child:
    """The child's spec under tmp_path, on a free port, and how to ask it things."""

    def __init__(self, tmp_path: Path, **spec: object) -> None:
        self.state = tmp_path
        self.port = free_tcp_port()
        script = tmp_path / "child.py"
        script.write_text(CHILD)
        values: dict[str, object] = dict(
            name="test child", binary=sys.executable, args=(str(script), str(self.port), str(tmp_path)),
            log=tmp_path / "child.log", pid_file=tmp_path / "run" / "child.pid",
            ports=(Port("127.0.0.1", self.port),), ready=self.answers, start_seconds=20.0)
        self.spec = ProcessSpec(**(values | spec))  # type: ignore[arg-type]

    async def served_by(self) -> int | None:
        """The pid that answers now (None: nothing answers)."""
        answer = await http_get("127.0.0.1", self.port, "/")
        return int(answer[1]) if answer is not None and answer[0] == 200 else None

    async def answers(self) -> bool:
        return await self.served_by() is not None

    @property
    def said(self) -> str:
        return self.spec.log.read_text()


@asynccontextmanager
async def supervised(child: Child, **spec: object) -> AsyncIterator[Supervisor]:
    supervisor = Supervisor(replace(child.spec, **spec), logger=logging.getLogger("svc.test-child"))  # type: ignore[arg-type]
    await supervisor.start()
    try:
        yield supervisor
    finally:
        await supervisor.stop()


async def test_start_returns_once_it_answers_and_stop_is_graceful(tmp_path: Path) -> None:
    child = Child(tmp_path)
    async with supervised(child) as supervisor:
        pid = supervisor.pid
        assert supervisor.running and pid is not None
        assert await child.served_by() == pid
        assert child.spec.pid_file is not None and child.spec.pid_file.read_text().strip() == str(pid)
        assert f"serving on {child.port}" in child.said
    # SIGTERM, which the child handles: it said so and exited 0.
    assert not supervisor.running and not alive(pid)
    assert await supervisor.wait() == 0
    assert "stopping gracefully" in child.said
    assert not child.spec.pid_file.exists()
    assert await child.served_by() is None


async def test_stop_gives_a_draining_child_the_grace_the_caller_gives(tmp_path: Path) -> None:
    (tmp_path / "drains").touch()
    # The spec's own bound would kill it at once; stop(grace=...) is what a caller gives it.
    child = Child(tmp_path, stop_seconds=0.01)
    async with supervised(child) as supervisor:
        stopping = asyncio.create_task(supervisor.stop(grace=300))

        async def draining() -> bool:
            return "stopping gracefully" in child.said

        await eventually(draining, "the child to begin draining")
        (tmp_path / "drained").touch()
        await stopping
        assert await supervisor.wait() == 0  # it finished, not SIGKILL
    (tmp_path / "drained").unlink()
    async with supervised(child) as supervisor:
        await supervisor.stop(grace=0.01)
        assert await supervisor.wait() == -signal.SIGKILL


async def test_a_port_held_by_another_program_is_one_error_and_nothing_runs(tmp_path: Path) -> None:
    child = Child(tmp_path)
    with socket.socket() as other:
        other.bind(("127.0.0.1", child.port))
        other.listen()
        assert taken_port(child.spec) == Port("127.0.0.1", child.port)
        supervisor = Supervisor(child.spec)
        with pytest.raises(PortInUse, match=f"the address 127.0.0.1:{child.port} is in use") as caught:
            await supervisor.start()
        assert caught.value.address == f"127.0.0.1:{child.port}"
        assert supervisor.pid is None  # never started
        await supervisor.stop()
    assert taken_port(child.spec) is None


async def test_a_port_taken_between_the_check_and_the_bind_is_the_same_error(tmp_path: Path) -> None:
    child = Child(tmp_path)
    squatter = socket.socket()

    async def take_the_port() -> None:  # runs after the check, before the child binds
        squatter.bind(("127.0.0.1", child.port))
        squatter.listen()

    with squatter:
        supervisor = Supervisor(replace(child.spec, prepare=take_the_port))
        with pytest.raises(PortInUse):
            await supervisor.start()
        assert supervisor.pid is not None and not supervisor.running
        await supervisor.stop()


async def test_a_missing_binary_is_one_error(tmp_path: Path) -> None:
    child = Child(tmp_path)
    supervisor = Supervisor(replace(child.spec, binary="svc-no-such-program", name="the thing"))
    with pytest.raises(MissingBinary, match=r"^the thing \(svc-no-such-program\) was not found$"):
        await supervisor.start()
    assert supervisor.pid is None
    await supervisor.stop()


async def test_a_failed_start_is_logged_in_one_line_and_retried(tmp_path: Path,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    child = Child(tmp_path)
    (tmp_path / "broken").touch()
    caplog.set_level(logging.INFO, "svc.test-child")
    async with supervised(child) as supervisor:
        assert not supervisor.running  # start() returned: svc runs without it meanwhile

        async def failed_twice() -> bool:
            return sum("did not start" in r.getMessage() for r in caplog.records) >= 2

        await eventually(failed_twice, "two failed starts")
        (tmp_path / "broken").unlink()
        await eventually(child.answers, "the child to start once repaired")
    failures = [r.getMessage() for r in caplog.records if "did not start" in r.getMessage()]
    # One line each: its status, its own words (the fatal line, not the last one), its log.
    assert all("\n" not in line for line in failures)
    assert failures[0] == (f"test child did not start; retrying in 0.1s: exit status 3: "
                           f"Fatal error: the config is broken (log: {child.spec.log})")
    assert "retrying in 0.2s" in failures[1]


async def test_on_exit_hears_of_a_death_and_may_take_the_process_over(tmp_path: Path,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    """The owner is told how a run ended before the restart, and may answer: not again."""
    heard: list[int] = []
    again = [True]

    async def on_exit(code: int) -> bool:
        heard.append(code)
        return again[0]

    child = Child(tmp_path)
    caplog.set_level(logging.INFO, "svc.test-child")
    async with supervised(child, on_exit=on_exit) as supervisor:
        first = supervisor.pid
        await http_get("127.0.0.1", child.port, "/die")

        async def restarted() -> bool:  # and ready: its start is over
            return sum(" started (pid " in r.getMessage() for r in caplog.records) == 2

        await eventually(restarted, "the child started again")
        assert heard == [7] and supervisor.pid != first
        again[0] = False
        await http_get("127.0.0.1", child.port, "/die")

        async def heard_twice() -> bool:
            return len(heard) == 2

        await eventually(heard_twice, "the second death heard")
        await eventually(lambda: asyncio.sleep(0, supervisor._task is None), "supervision to end")
        # Not started again: the owner replaces it (supervision is over, and the log says so).
        assert not supervisor.running and heard == [7, 7]
        assert any("exited (exit status 7); its owner replaces it" in r.getMessage() for r in caplog.records)


async def test_a_child_that_dies_is_started_again_with_backoff(tmp_path: Path,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    child = Child(tmp_path)
    caplog.set_level(logging.INFO, "svc.test-child")
    async with supervised(child) as supervisor:
        for starts in range(2, 5):
            await http_get("127.0.0.1", child.port, "/die")

            async def started_again(starts: int = starts) -> bool:
                return sum(" started (pid " in r.getMessage() for r in caplog.records) == starts

            await eventually(started_again, "the child to be started again")
            assert await child.served_by() == supervisor.pid
        deaths = [r.getMessage() for r in caplog.records if "exited" in r.getMessage()]
    assert len(deaths) == 3
    assert all(d.startswith("test child exited (exit status 7); starting it again in ") for d in deaths)
    assert all(d.endswith(": fatal: asked to exit") for d in deaths)
    # Each died young: the wait before the next start grows.
    delays = [float(re.search(r"again in ([\d.]+)s", d).group(1)) for d in deaths]  # type: ignore[union-attr]
    assert delays == sorted(delays) and delays[0] < delays[-1]


async def test_a_child_a_killed_svc_left_running_is_replaced(tmp_path: Path) -> None:
    child = Child(tmp_path)
    left = Supervisor(child.spec)
    await left.launch()  # started and not supervised: what an svc killed with -9 leaves
    old = left.pid
    assert old is not None
    # Its port is ours, not "taken".
    assert taken_port(child.spec) is None
    async with supervised(child) as supervisor:
        assert await left.wait() == 0  # asked to stop with the stop signal
        assert supervisor.pid != old
        assert await child.served_by() == supervisor.pid
    await left.stop()


async def test_a_pid_file_naming_someone_elses_process_is_left_alone(tmp_path: Path) -> None:
    child = Child(tmp_path)
    assert child.spec.pid_file is not None
    child.spec.pid_file.parent.mkdir()
    child.spec.pid_file.write_text(f"{os.getpid()}\n")  # this test's own process: not a child of that spec
    async with supervised(child) as supervisor:
        assert await child.served_by() == supervisor.pid


async def test_leftovers_in_the_group_of_a_killed_child_are_killed(tmp_path: Path) -> None:
    child = Child(tmp_path)
    (tmp_path / "with-worker").touch()
    async with supervised(child, kill_group=True) as supervisor:
        first = supervisor.pid
        assert first is not None
        worker = int((tmp_path / "worker.pid").read_text())
        assert alive(worker)
        os.kill(first, signal.SIGKILL)

        async def restarted() -> bool:
            pid = await child.served_by()
            return pid is not None and pid != first

        await eventually(restarted, "the child to be started again")
        assert not alive(worker)
        second_worker = int((tmp_path / "worker.pid").read_text())
    # A graceful stop: the child exits, its worker is killed after it (a signal is delivered, not
    # waited for: on a busy machine the worker may take a moment to be gone).

    async def worker_gone() -> bool:
        return not alive(second_worker)

    await eventually(worker_gone, "the second worker to be killed")


@pytest.mark.skipif(os.geteuid() != 0, reason="running as another user needs root")
async def test_the_child_runs_as_the_user_of_the_spec(tmp_path: Path) -> None:
    spec = ProcessSpec(name="id", binary="id", args=("-u",), log=tmp_path / "id.log", user="nobody")
    supervisor = Supervisor(spec)
    await supervisor.launch()
    assert await supervisor.wait() == 0
    assert spec.log.read_text().strip() == str(pwd.getpwnam("nobody").pw_uid)
