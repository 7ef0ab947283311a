"""The Nameserver port on PowerDNS Authoritative's HTTP API (/api/v1/servers/localhost, X-API-Key).

What shapes this adapter (measured on pdns 4.7, docs/dns.md):
- The sqlite backend has no busy timeout: two writes in flight make one fail with a bare 500
  ("database is locked" is only in pdns's log). So this adapter sends one write at a time, and
  retries a 500 on a write a few times (a failed write is atomic: nothing was applied); several
  svc processes on one PowerDNS still collide now and then, and the retry covers that too.
- A PATCH that changes nothing still bumps the SOA serial: `apply` with nothing to do sends none.
- An external PowerDNS caches answers (~20 s): creating a zone or switching DNSSEC is followed by
  a cache flush for the zone, or a name queried before would stay REFUSED / (un)signed that long.
- Only 422 answers carry JSON (`{"error": ...}`); every other error is text/plain.
- Key material: DNSSEC is switched with PUT zone {"dnssec": ...}, never by creating cryptokeys
  (whose answers hold the private key), and no response body is ever logged.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import httpx

from svc.adapters.nameserver.port import (
    NameserverRefused,
    NameserverUnavailable,
    NameserverZoneMissing,
    RRsetData,
    ZoneState,
)

log = logging.getLogger("svc.dns")

SERVER_PATH = "/api/v1/servers/localhost"
# Connect: 5 s, not 2: on a busy small machine (svc, PowerDNS, PostgreSQL and workerd sharing two
# cores) PowerDNS's webserver was seen taking over 2 s to accept; a down one is still said in 5.
TIMEOUT = httpx.Timeout(10.0, connect=5.0)
# A 500 on a write is retried this many times (sqlite "database is locked"), backing off from 50 ms.
WRITE_RETRIES = 4
RETRY_DELAY = 0.05
# SOA timers after the names: refresh, retry, expire, negative-answer TTL (the last one is how long
# resolvers remember that a name does not exist: short, as names are added through the API).
SOA_TIMERS = "10800 3600 604800 300"
NS_TTL = 3600


def _zone_id(name: str) -> str:
    """The zone's id in API paths: its absolute name (escaped: names may hold `/` in theory)."""
    return quote(_absolute(name), safe=".")


def _absolute(name: str) -> str:
    name = name.strip().lower()
    return name if name.endswith(".") else name + "."


class PowerDnsNameserver:
    """The Nameserver port on one PowerDNS. `api_url` is the webserver's base (http://host:port);
    for the managed pdns it moves at each restart (a free port every time), so it may be a callable
    read at each request."""

    def __init__(self, api_url: str | Callable[[], str], api_key: str, *, hostmaster: str,
                 description: str = "PowerDNS", transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._api_url = api_url
        self.description = description
        self._hostmaster = _absolute(hostmaster)
        self._client = httpx.AsyncClient(headers={"X-API-Key": api_key}, timeout=TIMEOUT, transport=transport)
        # One write at a time against this PowerDNS (see the module docstring).
        self._write_lock = asyncio.Lock()

    @property
    def api_url(self) -> str:
        url = self._api_url() if callable(self._api_url) else self._api_url
        return url.rstrip("/")

    async def aclose(self) -> None:
        await self._client.aclose()

    # --- the port ---

    async def zone_names(self) -> list[str]:
        zones = await self._json("GET", "/zones", params={"dnssec": "false"})
        return sorted(str(z["name"]).lower() for z in zones)

    async def zone(self, name: str) -> ZoneState | None:
        r = await self._request("GET", f"/zones/{_zone_id(name)}", missing_ok=True)
        if r is None:
            return None
        data = r.json()
        rrsets = []
        for rrset in data.get("rrsets", []):
            records = tuple(sorted(rec["content"] for rec in rrset.get("records", []) if not rec.get("disabled")))
            if records:
                rrsets.append(RRsetData(name=str(rrset["name"]).lower(), type=str(rrset["type"]).upper(),
                                        ttl=int(rrset["ttl"]), records=records))
        rrsets.sort(key=lambda r: (r.name, r.type))
        return ZoneState(name=str(data["name"]).lower(), rrsets=tuple(rrsets), dnssec=bool(data.get("dnssec")))

    async def serial(self, name: str) -> int | None:
        # rrsets=false: the zone's metadata only (its `serial` among it), not its every record set.
        r = await self._request("GET", f"/zones/{_zone_id(name)}", params={"rrsets": "false"}, missing_ok=True)
        return None if r is None else int(r.json()["serial"])

    async def ensure_zone(self, name: str, *, nameservers: list[str]) -> None:
        if not nameservers:
            raise NameserverRefused("a zone needs at least one nameserver")
        zone = _absolute(name)
        ns = [_absolute(n) for n in nameservers]
        # The SOA and NS are given explicitly rather than left to pdns's default-soa-content, so an
        # external PowerDNS configured for other uses makes the same zones. Serial 0: pdns sets it
        # (YYYYMMDDnn) and bumps it on every change (SOA-EDIT-API).
        body = {
            "name": zone, "kind": "Native", "nameservers": [],
            "rrsets": [
                {"name": zone, "type": "SOA", "ttl": NS_TTL,
                 "records": [{"content": f"{ns[0]} {self._hostmaster} 0 {SOA_TIMERS}", "disabled": False}]},
                {"name": zone, "type": "NS", "ttl": NS_TTL,
                 "records": [{"content": n, "disabled": False} for n in ns]},
            ],
        }
        r = await self._request("POST", "/zones", json=body, write=True, conflict_ok=True)
        if r is not None and r.status_code == 201:
            # A name of the zone queried before it existed would stay REFUSED in a caching pdns.
            await self._flush(zone)

    async def delete_zone(self, name: str) -> None:
        await self._request("DELETE", f"/zones/{_zone_id(name)}", write=True, missing_ok=True)
        await self._flush(_absolute(name))

    async def apply(self, zone: str, *, replace: list[RRsetData], delete: list[tuple[str, str]]) -> None:
        if not replace and not delete:
            return  # an empty PATCH would still bump the serial
        rrsets: list[dict[str, Any]] = [
            {"name": _absolute(r.name), "type": r.type.upper(), "ttl": r.ttl, "changetype": "REPLACE",
             "records": [{"content": c, "disabled": False} for c in r.records]}
            for r in replace
        ]
        rrsets += [{"name": _absolute(n), "type": t.upper(), "changetype": "DELETE"} for n, t in delete]
        r = await self._request("PATCH", f"/zones/{_zone_id(zone)}", json={"rrsets": rrsets}, write=True,
                                missing_ok=True)
        if r is None:
            raise NameserverZoneMissing(f"the zone {_absolute(zone)} does not exist on the nameserver")

    async def set_dnssec(self, zone: str, *, enabled: bool) -> None:
        name = _absolute(zone)
        # Idempotent in pdns: enabling a signed zone keeps its key (and so its DS at the parent).
        r = await self._request("PUT", f"/zones/{_zone_id(name)}", json={"dnssec": enabled}, write=True,
                                missing_ok=True)
        if r is None:
            raise NameserverRefused(f"the zone {name} does not exist on the nameserver")
        await self._flush(name)

    async def ds_records(self, zone: str) -> list[str]:
        # The list answer holds no private key (only a single key's GET or a POST does).
        r = await self._request("GET", f"/zones/{_zone_id(zone)}/cryptokeys", missing_ok=True)
        if r is None:
            return []
        found: list[str] = []
        for key in r.json():
            if not key.get("active") or not key.get("published", True):
                continue
            for ds in key.get("ds") or []:
                fields = str(ds).split()
                # "tag algorithm digest-type digest": SHA-256 only (SHA-1 is deprecated; SHA-384 is optional).
                if len(fields) == 4 and fields[2] == "2" and str(ds) not in found:
                    found.append(str(ds))
        return found

    # --- beyond the port (operations and tests) ---

    async def ping(self) -> bool:
        """Whether the API answers with this key."""
        if self._client.is_closed:
            return False
        try:
            r = await self._client.get(self.api_url + SERVER_PATH)
        except httpx.HTTPError:
            return False
        return r.status_code == 200

    async def export(self, zone: str) -> str | None:
        """The zone in zone-file text as PowerDNS holds it (None: no such zone)."""
        r = await self._request("GET", f"/zones/{_zone_id(zone)}/export", missing_ok=True)
        return None if r is None else r.text

    # --- HTTP ---

    async def _flush(self, zone: str) -> None:
        """Drop PowerDNS's cached answers for the zone's names (a cache-less managed pdns answers at
        once anyway; an external one would answer from its cache for up to cache-ttl seconds). Best
        effort: the change itself is made, and a stale answer lasts cache-ttl at most."""
        try:
            await self._request("PUT", "/cache/flush", params={"domain": zone})
        except (NameserverUnavailable, NameserverRefused) as exc:
            log.warning("PowerDNS's cache for %s was not flushed: %s", zone, exc)

    async def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        r = await self._request(method, path, **kwargs)
        assert r is not None
        return r.json()

    async def _request(self, method: str, path: str, *, json: Any = None, params: dict[str, str] | None = None,
                       write: bool = False, missing_ok: bool = False,
                       conflict_ok: bool = False) -> httpx.Response | None:
        """One API call. None when the object is missing (404, with missing_ok) or already exists
        (409, with conflict_ok); NameserverUnavailable / NameserverRefused for the failures."""
        if not write:
            r = await self._send(method, path, json=json, params=params)
        else:
            async with self._write_lock:
                delay = RETRY_DELAY
                for attempt in range(WRITE_RETRIES + 1):
                    r = await self._send(method, path, json=json, params=params)
                    if r.status_code != 500 or attempt == WRITE_RETRIES:
                        break
                    # Most likely "database is locked" (another writer on this PowerDNS); the failed
                    # write applied nothing.
                    log.info("PowerDNS answered 500 to %s %s; retrying in %.2fs", method, path, delay)
                    await asyncio.sleep(delay)
                    delay *= 2
        if r.status_code < 300:
            return r
        if r.status_code == 404 and missing_ok:
            return None
        if r.status_code == 409 and conflict_ok:
            return r
        raise self._error(method, path, r)

    async def _send(self, method: str, path: str, *, json: Any, params: dict[str, str] | None) -> httpx.Response:
        url = self.api_url + SERVER_PATH + path
        if self._client.is_closed:
            # A job still running while svc stops: retried by the next svc.
            raise NameserverUnavailable("the PowerDNS adapter is closed (svc is stopping)")
        try:
            return await self._client.request(method, url, json=json, params=params)
        except httpx.HTTPError as exc:
            # The exception text names the URL, never the key (a header).
            raise NameserverUnavailable(
                f"PowerDNS at {self.api_url} did not answer {method} {path}: {type(exc).__name__} {exc}".rstrip()
            ) from exc

    def _error(self, method: str, path: str, r: httpx.Response) -> Exception:
        what = f"PowerDNS answered {r.status_code} to {method} {path}"
        detail = _error_text(r) if "/cryptokeys" not in path else ""
        if detail:
            what += f": {detail}"
        if r.status_code in (400, 409, 422):
            return NameserverRefused(what)
        if r.status_code in (401, 403):
            return NameserverUnavailable(f"{what} (is SVC_PDNS_API_KEY the key of this PowerDNS?)")
        # 5xx, and a 404 where the path itself should exist (not a PowerDNS API at that address).
        return NameserverUnavailable(what)


def _error_text(r: httpx.Response) -> str:
    """PowerDNS's reason: the "error" of a 422's JSON body, else the first line of a text body."""
    if r.headers.get("content-type", "").startswith("application/json"):
        try:
            data = r.json()
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("error"), str):
            return str(data["error"])[:300]
    text = r.text.strip().splitlines()
    return text[0][:200] if text else ""
