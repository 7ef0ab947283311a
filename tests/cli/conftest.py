"""The `svc` client against a real `svc serve` (a subprocess, exactly as an operator runs it).

The client runs in the test's process (`Cli`, run_in_process): the console script's own entry point
with the person's environment, arguments, standard input and working directory, its output and exit
code captured; a subprocess would add a Python start-up to each of the suite's hundreds of commands.
The tests of what only a real process shows (start-up, --help, the browser login, a terminal, one
deploy from end to end) run `svc` as a subprocess (`Cli.process`, run_process)."""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from svc.adapters.registrar import FakeRegistrar
from svc.entry import main as svc_main
from tests.support.pdns import Pdns, clear_zones, free_dns_port
from tests.support.ports import free_port
from tests.support.wait import START_SECONDS

BIN = Path(sys.executable).parent
SVC = str(BIN / "svc")



def clean_env() -> dict[str, str]:
    """The test runner's environment without anything that would steer svc (SVC_*, XDG_CONFIG_HOME)
    or the width of its tables (COLUMNS, LINES: pytest-xdist's workers get COLUMNS=80; a test that
    wants a width says so)."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith("SVC_") and k not in ("XDG_CONFIG_HOME", "COLUMNS", "LINES")}


def uniq(prefix: str) -> str:
    """A subject or org slug no other test of the shared server uses."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def wait_until_up(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{url} exited with {proc.returncode}:\n{log.read_text(errors='replace')}")
        try:
            if httpx.get(url, timeout=2).status_code < 500:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    pytest.fail(f"{url} did not answer:\n{log.read_text(errors='replace')}")


@contextmanager
def process(args: list[str], env: dict[str, str], log: Path, ready_url: str) -> Iterator[None]:
    with log.open("wb") as out:
        proc = subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            wait_until_up(ready_url, proc, log)
            yield
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@contextmanager
def running_server(workdir: Path, log_level: str = "warning", **settings: str) -> Iterator[str]:
    """`svc serve` on free ports with its state in `workdir` (its output in workdir/server.log);
    yields the API URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    # As `make run` starts it: its own PowerDNS trusted as the public DNS (SVC_TRUST_OWN_ZONES).
    env = clean_env() | {"SVC_DATA_DIR": str(workdir / "data"), "SVC_ENABLE_DEV_AUTH": "true",
                         "SVC_PUBLIC_URL": url, "SVC_MAIL_INTERVAL_SECONDS": "0.2",
                         "SVC_DNS_PORT": str(free_dns_port()), "SVC_TRUST_OWN_ZONES": "true"}
    env |= {f"SVC_{k.upper()}": v for k, v in settings.items()}
    args = [SVC, "serve", "--host", "127.0.0.1", "--port", str(port), "--edge-port", str(free_port()),
            "--log-level", log_level]
    with process(args, env, workdir / "server.log", f"{url}/v1/config"):
        yield url


@pytest.fixture(scope="package")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One server (SQLite) for the CLI tests; each test uses its own users and orgs."""
    with running_server(tmp_path_factory.mktemp("svc-server")) as url:
        yield url


@pytest.fixture(scope="package")
def billing_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A server with the fake Polar (SVC_BILLING=fake) and the fake AI model (SVC_AI_FAKE) in its
    process: the billing and AI credit tests; its log beside."""
    workdir = tmp_path_factory.mktemp("svc-billing")
    with running_server(workdir, log_level="info", billing="fake", ai_fake="true") as url:
        yield url, workdir / "server.log"


T = TypeVar("T")


class ThreadedRegistrar:
    """The fake registrar (svc.adapters.registrar.fake) on an event loop of its own thread: the CLI
    runs in the test's thread and holds it while a command runs, and svc (a subprocess) calls the
    registrar meanwhile. Its helpers run on that loop (release() sets one of its asyncio events)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="fake-registrar", daemon=True)
        self.thread.start()
        self.fake = FakeRegistrar()
        self.url = self._run(self.fake.start())

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=60)

    def _call(self, fn: Callable[[], T]) -> T:
        async def call() -> T:
            return fn()

        return self._run(call())

    def fail(self, step: str, mode: str, **options: Any) -> None:
        """FakeRegistrar.fail: the next call(s) of `step` fail so."""
        self._call(lambda: self.fake.fail(step, mode, **options))

    def release(self) -> None:
        """Let go of the calls held (mode timeout or lost)."""
        self._call(self.fake.release)

    def ledger(self) -> list[dict[str, Any]]:
        return self._call(self.fake.ledger)

    def domains(self) -> list[dict[str, Any]]:
        return self._call(self.fake.domains)

    def ds(self, name: str) -> list[str]:
        return self._call(lambda: self.fake.ds(name))

    def calls(self, step: str | None = None) -> list[dict[str, Any]]:
        return self._call(lambda: self.fake.calls(step))

    def taken(self, name: str) -> None:
        self._call(lambda: self.fake.taken(name))

    def charges(self, name: str) -> tuple[int, int]:
        """(cents charged, cents refunded) for `name` in the ledger."""
        lines = [e for e in self.ledger() if e["name"] == name]
        return (sum(e["amountCents"] for e in lines if e["kind"] == "charge"),
                sum(e["amountCents"] for e in lines if e["kind"] == "refund"))

    def close(self) -> None:
        try:
            self._run(self.fake.stop())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=30)
            self.loop.close()


@pytest.fixture(scope="module")
async def domains_server(pdns: Pdns, tmp_path_factory: pytest.TempPathFactory) \
        -> AsyncIterator[tuple[str, ThreadedRegistrar]]:
    """`svc serve` driving the session's PowerDNS (its zones cleared first) with a fake registrar
    (ThreadedRegistrar, SVC_REGISTRAR_URL) whose calls time out after a second: the domains tests."""
    await clear_zones(pdns)
    registrar = ThreadedRegistrar()
    managed = pdns.running.managed
    settings = {"pdns_api_url": managed.api_url, "pdns_api_key": managed.api_key(),
                "nameservers": pdns.names.nameservers, "hostmaster": pdns.names.hostmaster,
                "registrar": "fake", "registrar_url": registrar.url, "registrar_timeout_seconds": "1"}
    try:
        with running_server(tmp_path_factory.mktemp("svc-domains"), **settings) as url:
            yield url, registrar
    finally:
        registrar.close()


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        assert self.code == 0, f"exit {self.code}: {self.err}"
        return json.loads(self.out)

    def error_code(self) -> str:
        """The `(code)` of the `error: <message> (<code>)` line on stderr."""
        line = next(ln for ln in self.err.splitlines() if ln.startswith("error: "))
        assert line.endswith(")"), line
        return line.rsplit("(", 1)[1][:-1]


def run_process(args: list[str], env: dict[str, str], input: str = "", cwd: Path | None = None) -> Result:
    """`svc ARGS` as a subprocess."""
    p = subprocess.run([SVC, *args], env=env, input=input, cwd=cwd, capture_output=True, text=True, timeout=120)
    return Result(p.returncode, p.stdout, p.stderr)


def run_in_process(args: list[str], env: dict[str, str], input: str = "", cwd: Path | None = None) -> Result:
    """`svc ARGS` in this process, through the console script's entry point (svc.entry.main),
    with exactly `env` as the environment, `input` on a piped standard input, `cwd` as the working
    directory; what it writes and its exit code, as run_process gives them. Not thread-safe (it
    swaps the process's streams and environment): the CLI tests are synchronous."""
    stdout, stderr = io.BytesIO(), io.BytesIO()
    # Kept until the values are read: a text wrapper closes its buffer when it goes.
    out = io.TextIOWrapper(stdout, encoding="utf-8", write_through=True)
    err = io.TextIOWrapper(stderr, encoding="utf-8", write_through=True)
    code = 0
    with pytest.MonkeyPatch.context() as mp:
        for name in set(os.environ) - set(env):
            mp.delenv(name)
        for name, value in env.items():
            mp.setenv(name, value)
        if cwd is not None:
            mp.chdir(cwd)
        mp.setattr(sys, "argv", [SVC, *args])
        mp.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(input.encode()), encoding="utf-8"))
        mp.setattr(sys, "stdout", out)
        mp.setattr(sys, "stderr", err)
        try:
            svc_main()
        except SystemExit as exc:  # as the interpreter turns it into an exit status
            if isinstance(exc.code, str):
                err.write(exc.code + "\n")
            code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        out.flush()
        err.flush()
    return Result(code, stdout.getvalue().decode(), stderr.getvalue().decode())


class Cli:
    """One person's `svc`: their own HOME and config dir (credential store), talking to `api_url`.
    Calling it runs `svc` in-process; `process()` runs it as a subprocess."""

    def __init__(self, api_url: str, home: Path) -> None:
        self.api_url = api_url
        self.home = home
        self.config_home = home / ".config"
        home.mkdir(parents=True, exist_ok=True)

    def env(self, **extra: str) -> dict[str, str]:
        return clean_env() | {"HOME": str(self.home), "XDG_CONFIG_HOME": str(self.config_home),
                              "SVC_API_URL": self.api_url} | extra

    def __call__(self, *args: str, input: str | None = None, env: dict[str, str] | None = None,
                 cwd: Path | None = None) -> Result:
        return run_in_process(list(args), env or self.env(), input or "", cwd)

    def process(self, *args: str, input: str | None = None, env: dict[str, str] | None = None,
                cwd: Path | None = None) -> Result:
        return run_process(list(args), env or self.env(), input or "", cwd)

    def ok(self, *args: str, input: str | None = None, env: dict[str, str] | None = None,
           cwd: Path | None = None) -> Result:
        r = self(*args, input=input, env=env, cwd=cwd)
        assert r.code == 0, f"svc {' '.join(args)} -> {r.code}\n{r.out}\n{r.err}"
        return r

    def fails(self, code: str, *args: str, exit_code: int = 1, input: str | None = None,
              env: dict[str, str] | None = None, cwd: Path | None = None) -> Result:
        r = self(*args, input=input, env=env, cwd=cwd)
        assert r.code == exit_code, f"svc {' '.join(args)} -> {r.code}\n{r.out}\n{r.err}"
        assert r.error_code() == code, r.err
        assert r.out == "", r.out
        return r

    def login(self, subject: str) -> dict[str, Any]:
        return dict(self.ok("login", "--dev", subject, "--json").json())

    @property
    def credentials_file(self) -> Path:
        return self.config_home / "svc" / "credentials.json"


People = Callable[[str], Cli]


@pytest.fixture
def people(server: str, tmp_path: Path) -> People:
    """`people("alice")`: a Cli with a home of its own, not signed in yet."""
    def make(name: str) -> Cli:
        return Cli(server, tmp_path / name)

    return make


@pytest.fixture
def cli(people: People) -> Cli:
    return people("me")
