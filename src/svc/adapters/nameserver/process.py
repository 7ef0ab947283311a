"""The managed PowerDNS: a private `pdns_server` that `svc serve` starts, supervises and stops when no
external PowerDNS is configured. Everything it has lives under SVC_DATA_DIR/pdns/:

    conf/pdns.conf     written at each start (it holds the API key: 0600, like the whole dir)
    pdns.sqlite3       the gsqlite3 backend, made from Debian's schema at first start
    api.key            the API key, generated at first start and kept
    run/               pdns's control socket and pid file
    pdns.log           what pdns says (stderr)

DNS is answered on dns_host:dns_port; the API (webserver) on a free 127.0.0.1 port chosen at each
start, so a port another program took meanwhile never blocks a restart. Caches are off: every
change made through the API is answered by the very next query. The process runs in the
foreground (daemon=no, guardian=no) as svc's child, in a session of its own so a Ctrl-C meant for
svc reaches it only through svc's orderly stop.

The supervision rules are the edge's (svc/edge): the DNS port taken by another program is the
one failure that stops svc from starting (NameserverPortInUse, one line); any other failed start
is logged in one line and retried with backoff, as is a pdns that dies while svc runs."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import re
import secrets
import shutil
import signal
import socket
import sqlite3
import time
from pathlib import Path

import httpx

from svc.kit.files import file_size, read_from, tail

log = logging.getLogger("svc.dns")

START_SECONDS = 5.0
STOP_SECONDS = 5.0
PORT_GRACE_SECONDS = 1.0
MAX_BACKOFF = 10.0
LOG_ROTATE_BYTES = 10 * 1024 * 1024
SCHEMA_PATHS = (
    Path("/usr/share/pdns-backend-sqlite3/schema/schema.sqlite3.sql"),
    Path("/usr/share/doc/pdns-backend-sqlite3/schema.sqlite3.sql"),
)
SCHEMA_HINT = "install pdns-backend-sqlite3 (Debian; `make setup` does it)"


class NameserverProcessError(RuntimeError):
    """pdns_server would not start or answer its API."""


class NameserverPortInUse(NameserverProcessError):
    """The DNS address is taken by another program (not a pdns of this data dir)."""

    def __init__(self, address: str) -> None:
        super().__init__(f"the DNS address {address} is in use")
        self.address = address


def dns_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def find_pdns(binary: str) -> str | None:
    """The pdns_server executable (a name on PATH, /usr/sbin included, or a path), or None."""
    if os.sep in binary:
        return binary if os.path.isfile(binary) and os.access(binary, os.X_OK) else None
    path = os.environ.get("PATH", os.defpath)
    return shutil.which(binary, path=os.pathsep.join([path, "/usr/sbin", "/usr/local/sbin"]))


def find_schema() -> Path | None:
    """Debian's schema of the gsqlite3 backend (pdns-backend-sqlite3), or None."""
    return next((p for p in SCHEMA_PATHS if p.is_file()), None)


def dns_port_in_use(host: str, port: int) -> bool:
    """Whether another socket holds host:port for UDP or TCP (DNS needs both). TCP binds with
    SO_REUSEADDR as pdns does, so connections in TIME_WAIT do not count."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    for kind in (socket.SOCK_DGRAM, socket.SOCK_STREAM):
        with socket.socket(family, kind) as s:
            if kind == socket.SOCK_STREAM:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((host, port))
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    return True
    return False


def free_tcp_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class PdnsLayout:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.conf_dir = root / "conf"
        self.conf = self.conf_dir / "pdns.conf"
        self.db = root / "pdns.sqlite3"
        self.api_key = root / "api.key"
        self.run_dir = root / "run"
        self.pid = self.run_dir / "pdns.pid"
        self.log = root / "pdns.log"

    def prepare(self) -> None:
        """Directories, the sqlite db (first start) and the API key (first start). Raises
        NameserverProcessError when the backend's schema is not installed."""
        for d in (self.root, self.conf_dir, self.run_dir):
            d.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not self.db.exists():
            schema = find_schema()
            if schema is None:
                raise NameserverProcessError(f"the PowerDNS sqlite schema was not found; {SCHEMA_HINT}")
            # Made aside and moved into place: a start killed halfway leaves no empty db behind.
            tmp = self.db.with_suffix(".tmp")
            tmp.unlink(missing_ok=True)
            con = sqlite3.connect(tmp)
            try:
                con.executescript(schema.read_text())
            finally:
                con.close()
            os.chmod(tmp, 0o600)
            tmp.replace(self.db)
        if not self.api_key.exists():
            tmp = self.api_key.with_suffix(".tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_urlsafe(32))
            tmp.replace(self.api_key)
        if file_size(self.log) > LOG_ROTATE_BYTES:
            self.log.replace(self.log.with_suffix(".log.1"))

    def read_api_key(self) -> str:
        return self.api_key.read_text().strip()


def render_conf(layout: PdnsLayout, *, api_key: str, dns_host: str, dns_port: int, api_port: int,
                soa_content: str) -> str:
    lines = {
        "launch": "gsqlite3",
        "gsqlite3-database": str(layout.db),
        "gsqlite3-dnssec": "yes",
        "local-address": dns_host,
        "local-port": str(dns_port),
        "socket-dir": str(layout.run_dir),
        "daemon": "no",
        "guardian": "no",
        "disable-syslog": "yes",
        "log-timestamp": "yes",
        "loglevel": "4",
        # Empty: no call-home DNS lookup for security announcements.
        "security-poll-suffix": "",
        "api": "yes",
        "api-key": api_key,
        "webserver": "yes",
        "webserver-address": "127.0.0.1",
        "webserver-port": str(api_port),
        "webserver-allow-from": "127.0.0.0/8,::1",
        # Caches off: a zone made, deleted or (un)signed is answered so by the very next query
        # (with caches, an answer given before the change is repeated for up to 20 s).
        "cache-ttl": "0",
        "query-cache-ttl": "0",
        "negquery-cache-ttl": "0",
        # For zones made without an SOA (svc always gives one; pdnsutil may not).
        "default-soa-content": soa_content,
    }
    return "# Written by svc at each start of its managed PowerDNS; edits are lost.\n" + "".join(
        f"{k}={v}\n" for k, v in lines.items())


class PdnsProcess:
    """One pdns_server on a layout: start (and wait until its API answers), wait, stop."""

    def __init__(self, binary: str, layout: PdnsLayout, *, dns_host: str, dns_port: int, soa_content: str) -> None:
        self.binary = binary
        self.layout = layout
        self.dns_host = dns_host
        self.dns_port = dns_port
        self.soa_content = soa_content
        self.api_port: int | None = None
        self._proc: asyncio.subprocess.Process | None = None

    @property
    def address(self) -> str:
        return dns_address(self.dns_host, self.dns_port)

    @property
    def api_url(self) -> str:
        """The API's base URL of the current (or last) start; before any start, one nothing answers on."""
        return f"http://127.0.0.1:{self.api_port or 9}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    async def stop_stale(self) -> None:
        """A pdns of this data dir that an svc killed without stopping it left running (it still
        holds the DNS port): found by its pid file and checked by its command line."""
        pid = stale_pdns(self.layout)
        if pid is None or (self._proc is not None and pid == self._proc.pid):
            return
        log.warning("stopping the PowerDNS (pid %s) a previous svc left running", pid)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        if not await self._gone(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            await self._gone(pid)

    async def _gone(self, pid: int) -> bool:
        """Whether the stale pdns `pid` has exited within STOP_SECONDS (it is not our child: polled)."""
        for _ in range(int(STOP_SECONDS / 0.02)):
            if not _is_pdns_of(pid, self.layout):
                return True
            await asyncio.sleep(0.02)
        return False

    async def start(self) -> None:
        """Start pdns_server and return once its API answers. NameserverPortInUse when the DNS
        address is taken; NameserverProcessError (with pdns's own words) for any other failure."""
        if self.running:
            return
        await self.stop_stale()
        await self._check_port()
        await asyncio.to_thread(self.layout.prepare)
        api_key = self.layout.read_api_key()
        self.api_port = free_tcp_port()
        text = render_conf(self.layout, api_key=api_key, dns_host=self.dns_host, dns_port=self.dns_port,
                           api_port=self.api_port, soa_content=self.soa_content)
        tmp = self.layout.conf.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        tmp.replace(self.layout.conf)
        offset = file_size(self.layout.log)
        with self.layout.log.open("ab") as out:
            self._proc = await asyncio.create_subprocess_exec(
                self.binary, f"--config-dir={self.layout.conf_dir}",
                stdin=asyncio.subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True)
        try:
            await self._wait_ready(api_key)
        except NameserverProcessError:
            await self.stop()
            said = read_from(self.layout.log, offset)
            if _port_taken(said, self.dns_port):
                raise NameserverPortInUse(self.address) from None
            raise NameserverProcessError(
                f"pdns_server did not start (log: {self.layout.log}): {_reason(said)}") from None
        log.info("PowerDNS started (pid %s): DNS on %s, API on 127.0.0.1:%s", self._proc.pid, self.address,
                 self.api_port)

    async def _check_port(self) -> None:
        """NameserverPortInUse when another program holds the DNS address (pdns would exit at once).
        A short grace covers a pdns of ours on its way out (a stale one just stopped, the previous
        run of a restart): its threads may hold the sockets a moment after it shows as exited."""
        deadline = time.monotonic() + PORT_GRACE_SECONDS
        while dns_port_in_use(self.dns_host, self.dns_port):
            if time.monotonic() > deadline:
                raise NameserverPortInUse(self.address)
            await asyncio.sleep(0.05)

    async def _wait_ready(self, api_key: str) -> None:
        deadline = time.monotonic() + START_SECONDS
        url = f"{self.api_url}/api/v1/servers/localhost"
        async with httpx.AsyncClient(headers={"X-API-Key": api_key}, timeout=1.0) as client:
            while True:
                if not self.running:
                    raise NameserverProcessError("exited")
                try:
                    if (await client.get(url)).status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    # E.g. the API port was taken after it was chosen: pdns then serves DNS without an API.
                    raise NameserverProcessError(f"no API answer within {START_SECONDS:.0f}s")
                await asyncio.sleep(0.02)

    async def wait(self) -> int:
        """Until pdns exits; returns its exit status."""
        if self._proc is None:
            return 0
        return await self._proc.wait()

    async def stop(self) -> None:
        """SIGTERM (pdns exits in milliseconds), SIGKILL after STOP_SECONDS, and reaped."""
        proc = self._proc
        if proc is None:
            return
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), timeout=STOP_SECONDS)
            except TimeoutError:
                log.warning("PowerDNS did not stop in %ss; killing it", STOP_SECONDS)
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()

    def last_log(self, limit: int = 600) -> str:
        return _reason(tail(self.layout.log, limit))


class ManagedPowerDns:
    """The supervised pdns: started once by svc, started again whenever it exits, stopped at the end."""

    def __init__(self, process: PdnsProcess) -> None:
        self.process = process
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def api_url(self) -> str:
        return self.process.api_url

    def api_key(self) -> str:
        return self.process.layout.read_api_key()

    async def start(self) -> None:
        """Start pdns and its supervisor. NameserverPortInUse (pdns not running) when the DNS
        address is taken; another failed start is logged in one line and retried."""
        self._stopping.clear()
        try:
            await self.process.start()
        except NameserverPortInUse:
            raise
        except (NameserverProcessError, OSError) as exc:
            log.error("the nameserver (PowerDNS on %s) did not start; retrying: %s", self.process.address, exc)
        self._task = asyncio.create_task(self._supervise(), name="svc-pdns-supervisor")

    async def stop(self) -> None:
        self._stopping.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self.process.stop()

    async def _supervise(self) -> None:
        backoff = 0.1
        while not self._stopping.is_set():
            if self.process.running:
                code = await self.process.wait()
                if self._stopping.is_set():
                    return
                log.error("PowerDNS exited (%s); starting it again. %s", code, self.process.last_log())
            try:
                await self.process.start()
                backoff = 0.1
                continue
            except (NameserverProcessError, OSError) as exc:
                log.error("PowerDNS did not start; retrying in %.1fs: %s", backoff, exc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), timeout=backoff)
            backoff = min(backoff * 2, MAX_BACKOFF)


def stale_pdns(layout: PdnsLayout) -> int | None:
    """The pid of a pdns_server running on this layout's config (its pid file, checked by its command line)."""
    try:
        pid = int(layout.pid.read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if _is_pdns_of(pid, layout) else None


def _is_pdns_of(pid: int, layout: PdnsLayout) -> bool:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    args = raw.decode("utf-8", "replace").split("\0")
    return state != "Z" and bool(args) and args[0].endswith("pdns_server") and \
        f"--config-dir={layout.conf_dir}" in args


_BIND_FAILED = re.compile(r"Unable to bind (?:UDP|TCP) socket to '(?P<addr>[^']*)': Address already in use")


def _port_taken(said: str, port: int) -> bool:
    """Whether pdns's output says the DNS port could not be bound (it exits at once then)."""
    return any(m.group("addr").endswith(f":{port}") for m in _BIND_FAILED.finditer(said))


def _reason(said: str) -> str:
    """The line of pdns's output that says what went wrong (a fatal or failed line, else the last)."""
    lines = [line.strip() for line in said.splitlines() if line.strip()]
    for line in reversed(lines):
        if re.search(r"fatal|failed|unable|error|does not exist|exception", line, re.IGNORECASE):
            return line
    return lines[-1] if lines else "it said nothing"



