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

It runs under svc.supervisor, with the rules of every process svc runs (the edge's nginx too): the
DNS port taken by another program is the one failure that stops svc from starting
(NameserverPortInUse, one line); any other failed start is logged in one line and retried with
backoff, as is a pdns that dies while svc runs."""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path

from svc.supervisor import Port, PortInUse, ProcessError, ProcessSpec, Supervisor, free_tcp_port, http_get

log = logging.getLogger("svc.dns")

START_SECONDS = 5.0
SCHEMA_PATHS = (
    Path("/usr/share/pdns-backend-sqlite3/schema/schema.sqlite3.sql"),
    Path("/usr/share/doc/pdns-backend-sqlite3/schema.sqlite3.sql"),
)
SCHEMA_HINT = "install pdns-backend-sqlite3 (Debian; `make setup` does it)"


class NameserverProcessError(ProcessError):
    """pdns_server would not start or answer its API."""


class NameserverPortInUse(NameserverProcessError):
    """The DNS address is taken by another program (not a pdns of this data dir)."""

    def __init__(self, address: str) -> None:
        super().__init__(f"the DNS address {address} is in use")
        self.address = address


def find_schema() -> Path | None:
    """Debian's schema of the gsqlite3 backend (pdns-backend-sqlite3), or None."""
    return next((p for p in SCHEMA_PATHS if p.is_file()), None)


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


def pdns_spec(binary: str, layout: PdnsLayout, dns: Port, *, prepare: Callable[[], Awaitable[None]] | None = None,
              ready: Callable[[], Awaitable[bool]] | None = None) -> ProcessSpec:
    """pdns_server as svc runs it on a layout: `prepare` writes its config, `ready`: its API answers."""
    return ProcessSpec(
        name=f"PowerDNS (DNS on {dns.address})", binary=binary, args=(f"--config-dir={layout.conf_dir}",),
        log=layout.log, pid_file=layout.pid, ports=(dns,), prepare=prepare, ready=ready,
        start_seconds=START_SECONDS)


class ManagedPowerDns:
    """The supervised pdns: started once by svc, started again whenever it exits, stopped at the end.
    Its API listens on a free port chosen at each start (the adapter follows `api_url`)."""

    def __init__(self, binary: str, layout: PdnsLayout, dns: Port, *, soa_content: str) -> None:
        self.layout = layout
        self.dns = dns
        self.soa_content = soa_content
        self.api_port: int | None = None
        self._key = ""
        self.process = Supervisor(pdns_spec(binary, layout, self.dns, prepare=self._write_config,
                                            ready=self._api_answers), logger=log)

    @property
    def address(self) -> str:
        return self.dns.address

    @property
    def api_url(self) -> str:
        """The API's base URL of the current (or last) start; before any start, one nothing answers on."""
        return f"http://127.0.0.1:{self.api_port or 9}"

    def api_key(self) -> str:
        return self.layout.read_api_key()

    async def start(self) -> None:
        """Start pdns and its supervisor. NameserverPortInUse (pdns not running) when the DNS
        address is taken; another failed start is logged in one line and retried."""
        try:
            await self.process.start()
        except PortInUse as exc:
            raise NameserverPortInUse(exc.address) from None

    async def stop(self) -> None:
        await self.process.stop()

    async def _write_config(self) -> None:
        """Before each start: the layout (a sqlite db, a key), a fresh API port, the config with both."""
        await asyncio.to_thread(self.layout.prepare)
        self._key = self.api_key()
        self.api_port = free_tcp_port()
        text = render_conf(self.layout, api_key=self._key, dns_host=self.dns.host, dns_port=self.dns.port,
                           api_port=self.api_port, soa_content=self.soa_content)
        tmp = self.layout.conf.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        tmp.replace(self.layout.conf)

    async def _api_answers(self) -> bool:
        # When the API port was taken after it was chosen, pdns serves DNS without an API: not ready.
        assert self.api_port is not None
        answer = await http_get("127.0.0.1", self.api_port, "/api/v1/servers/localhost",
                                headers={"X-API-Key": self._key}, seconds=1.0)
        return answer is not None and answer[0] == 200
