"""The ownership check of a custom hostname, and what it saw in words.

Proven by any of (the spec's "Custom hostnames"):
1. the host is inside a zone the same org holds here (no lookup: svc serves that zone);
2. TXT `_svc-verify.<host>` holds the row's verification value;
3. the CNAME of <host> points to the fallback origin.

The lookups (2 and 3, at once) go through the Resolver port and never hold anything of the store:
callers read, close their reads, check, then write. When nothing proves it, `error` says what each
lookup saw in one sentence ("TXT _svc-verify.www.example.com has no record, and CNAME
www.example.com points to x.example.net., expected edge.svc.localhost.")."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass

from svc.adapters.resolver.port import Lookup, Outcome, Resolver
from svc.domains.dns import links, records
from svc.domains.dns import queries as dns_queries
from svc.kit.store_session import StoreSession

TXT_PREFIX = "_svc-verify."
MAX_ERROR = 500  # the column's size
MAX_NAME = 253
_SHOWN_VALUES = 3
_SHOWN_CHARS = 60
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class Check:
    proven: bool
    # How it was proven: "zone", "txt" or "cname"; None when not proven.
    by: str | None = None
    error: str | None = None


def txt_name(host: str) -> str:
    return TXT_PREFIX + host


async def in_org_zone(session: StoreSession, org_id: str, host: str) -> bool:
    return await links.org_zone(session, org_id, host) is not None


async def in_org_zones(session: StoreSession, wanted: list[tuple[str, str]]) -> set[str]:
    """Of (host, org id) pairs, the hosts inside a zone of their org (proof 1), in one query. The
    closest zone decides: zones of different orgs never overlap."""
    owners = await dns_queries.zone_owners(session, [name for host, _ in wanted for name in records.enclosing(host)])
    proven: set[str] = set()
    for host, org_id in wanted:
        for name in records.enclosing(host):
            if name in owners:
                if owners[name] == org_id:
                    proven.add(host)
                break
    return proven


def _same(held: str, value: str) -> bool:
    # Some DNS panels keep the quotes people paste with the value.
    return held.strip().strip('"').strip() == value


async def check_records(resolver: Resolver, host: str, value: str, target: str) -> Check:
    """Proofs 2 and 3 by DNS lookups (`target`: the fallback origin, absolute)."""
    if len(txt_name(host)) > MAX_NAME:
        # A host of 242 to 253 characters has no room for the TXT name: only the CNAME can prove it.
        txt = Lookup(Outcome.failed, detail="too long")
        cname = await resolver.cname(host)
    else:
        txt, cname = await asyncio.gather(resolver.txt(txt_name(host)), resolver.cname(host))
    if txt.outcome is Outcome.found and any(_same(v, value) for v in txt.values):
        return Check(proven=True, by="txt")
    if cname.outcome is Outcome.found and target.lower() in cname.values:
        return Check(proven=True, by="cname")
    return Check(proven=False, error=words(resolver, host, txt, cname, target))


def _shown(text: str) -> str:
    text = _UNPRINTABLE.sub("?", text)
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "..."


def _unanswered(resolver: Resolver, lookup: Lookup, name: str) -> str | None:
    if lookup.outcome is Outcome.failed and lookup.detail == "too long":
        return f"TXT {name} cannot exist (a name has at most {MAX_NAME} characters): use the CNAME"
    if lookup.outcome is Outcome.timeout:
        return f"{resolver.description} did not answer"
    if lookup.outcome is Outcome.failed:
        return f"{resolver.description} could not answer for {name} ({lookup.detail})"
    return None


def _txt_words(resolver: Resolver, host: str, lookup: Lookup) -> str:
    name = txt_name(host)
    failed = _unanswered(resolver, lookup, name)
    if failed is not None:
        return failed
    if lookup.outcome is Outcome.found and lookup.values:
        held = [f'"{_shown(v)}"' for v in lookup.values[:_SHOWN_VALUES]]
        more = f" and {len(lookup.values) - _SHOWN_VALUES} more" if len(lookup.values) > _SHOWN_VALUES else ""
        return f"TXT {name} holds {', '.join(held)}{more}, expected the value shown"
    return f"TXT {name} has no record"


def _cname_words(resolver: Resolver, host: str, lookup: Lookup, target: str) -> str:
    failed = _unanswered(resolver, lookup, host)
    if failed is not None:
        return failed
    if lookup.outcome is Outcome.nxdomain:
        return f"{host} does not exist (NXDOMAIN)"
    if lookup.outcome is Outcome.found and lookup.values:
        return f"CNAME {host} points to {_shown(lookup.values[0])}, expected {target}"
    return f"CNAME {host} has no record, expected one pointing to {target}"


def words(resolver: Resolver, host: str, txt: Lookup, cname: Lookup, target: str) -> str:
    """Both observations in one sentence (one, when both lookups failed alike)."""
    if (txt.outcome is Outcome.failed and cname.outcome is Outcome.failed and txt.detail == cname.detail):
        sentence = f"{resolver.description} could not answer for {txt_name(host)} nor {host} ({txt.detail})"
    else:
        parts: list[str] = []
        for part in (_txt_words(resolver, host, txt), _cname_words(resolver, host, cname, target)):
            if part not in parts:
                parts.append(part)
        sentence = ", and ".join(parts)
    return sentence if len(sentence) <= MAX_ERROR else sentence[: MAX_ERROR - 3] + "..."
