"""The nameserver port: what the DNS area needs of an authoritative nameserver. svc's state store
is the source of truth for zones and record sets; the nameserver is converged from it (a job per
change, a periodic reconcile), so every call here is idempotent and says what should be, not
what to change by how much.

Names are absolute, lowercase, with the trailing dot ("www.example.com."); record contents are
zone-file text with absolute names, as dnspython's `to_text(relativize=False)` writes them
("10 mail.example.com.", '"v=spf1 -all"'). The nameserver signs DNSSEC zones itself: no key
material ever reaches svc."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class RRsetData:
    name: str
    type: str
    ttl: int
    records: tuple[str, ...]


@dataclass(frozen=True)
class ZoneState:
    """A zone as the nameserver holds it."""

    name: str
    rrsets: tuple[RRsetData, ...]
    dnssec: bool


class NameserverUnavailable(Exception):
    """The nameserver could not be reached or answered with a server error: try again later (the
    job that called retries with backoff). The message never holds the API key."""


class NameserverRefused(Exception):
    """The nameserver refused the request as invalid (a bug in svc's validation if it happens:
    svc checks every record before it is stored). Retrying will not help."""


class NameserverZoneMissing(NameserverRefused):
    """`apply` to a zone the nameserver does not have (deleted behind svc's back, or never made):
    the caller converges the whole zone instead."""


class Nameserver(Protocol):
    description: str  # for the startup banner and logs: "PowerDNS 4.7 (managed, DNS on 127.0.0.1:5353)"

    async def zone_names(self) -> list[str]:
        """Every zone the nameserver serves (absolute names)."""
        ...

    async def zone(self, name: str) -> ZoneState | None:
        """The zone with all its record sets, or None when the nameserver does not have it."""
        ...

    async def serial(self, name: str) -> int | None:
        """The SOA serial the nameserver serves for the zone (it moves with every change), without
        its record sets; None when the nameserver does not have it."""
        ...

    async def ensure_zone(self, name: str, *, nameservers: list[str]) -> None:
        """Create the zone when missing (with an SOA naming nameservers[0] and the apex NS set);
        an existing zone is left as it is."""
        ...

    async def delete_zone(self, name: str) -> None:
        """Remove the zone and everything in it; a missing zone is fine."""
        ...

    async def apply(self, zone: str, *, replace: list[RRsetData], delete: list[tuple[str, str]]) -> None:
        """In one change, all or nothing: set each of `replace` to exactly its records, and remove
        each (name, type) of `delete` (a missing one is fine). NameserverZoneMissing when the zone
        is not there (nothing is applied)."""
        ...

    async def set_dnssec(self, zone: str, *, enabled: bool) -> None:
        """Sign the zone (keys made and kept by the nameserver) or stop signing and drop its keys."""
        ...

    async def ds_records(self, zone: str) -> list[str]:
        """The DS records (digest type 2, SHA-256) of the zone's signing key, in zone-file text
        ("12345 13 2 ABCD..."), for the owner to register at the parent; [] when unsigned."""
        ...
