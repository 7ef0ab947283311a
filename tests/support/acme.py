"""pebble, the ACME test CA, run through svc's supervisor for a test, its lookups and DNS-01 checks
answered by the session's PowerDNS."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from svc.adapters.acme.pebble import Pebble, find_pebble
from svc.supervisor import free_tcp_port
from tests.support.components import needs

PEBBLE_REQUIRED = needs("pebble", find_pebble() is not None)


@asynccontextmanager
async def running_pebble(root: Path, dns_port: int, *, http_port: int | None = None, authz_reuse: int | None = None,
                         validity_seconds: int | None = None) -> AsyncIterator[Pebble]:
    """`http_port`: where it checks HTTP-01 (a free, closed port when not given); `authz_reuse`:
    the percentage of new orders handed back a valid authorization (pebble's default 50);
    `validity_seconds`: the certificates' lifetime (pebble's default 5 years)."""
    binary = find_pebble()
    assert binary is not None
    pebble = Pebble(root, dns_server=f"127.0.0.1:{dns_port}", http_port=http_port or free_tcp_port("127.0.0.1"),
                    tls_port=free_tcp_port("127.0.0.1"), authz_reuse=authz_reuse, validity_seconds=validity_seconds)
    await pebble.start(binary)
    try:
        yield pebble
    finally:
        await pebble.stop()
