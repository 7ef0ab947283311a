"""SPF (RFC 7208) of a received message with pyspf, asking svc's configured resolver.

pyspf looks its DNS up through its module's `DNSLookup` function (dnspython's global resolver,
/etc/resolv.conf). svc's checks must ask the resolver svc is configured with (SVC_DNS_RESOLVER, or
the managed PowerDNS in a local run): the function is replaced once, at import, by one that asks
the resolver of the check under way (a context variable, set in the check's own thread); a call
outside a check of ours keeps pyspf's own behaviour."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from typing import Any

import dns.exception
import dns.resolver
import spf

from svc.models.states import SpfResult

log = logging.getLogger("svc.email.smtp")

# One check's whole DNS budget (RFC 7208 4.6.4 recommends at least 20 s; a sender waits on DATA's
# answer meanwhile, and a slow domain's mail is retried on a temperror anyway).
CHECK_SECONDS = 10.0

_asking: contextvars.ContextVar[dns.resolver.Resolver | None] = contextvars.ContextVar("svc_spf_resolver",
                                                                                      default=None)
_pyspf_lookup = spf.DNSLookup


def _lookup(name: str, qtype: str, strict: Any = True, timeout: float = 30) -> list[Any]:
    """pyspf's DNSLookup_dnspython, asking the check's resolver: [((name, type), value)]."""
    resolver = _asking.get()
    if resolver is None:
        return list(_pyspf_lookup(name, qtype, strict, timeout))
    found: list[Any] = []
    try:
        answers = resolver.resolve(name, qtype, lifetime=timeout, search=False)
        for rdata in answers:
            if qtype in ("A", "AAAA"):
                found.append(((name, qtype), rdata.address))
            elif qtype == "MX":
                found.append(((name, qtype), (rdata.preference, rdata.exchange)))
            elif qtype == "PTR":
                found.append(((name, qtype), rdata.target.to_text(True)))
            elif qtype in ("TXT", "SPF"):
                found.append(((name, qtype), rdata.strings))
    except (dns.resolver.NoAnswer, dns.resolver.NXDOMAIN):
        pass
    except (dns.exception.Timeout, dns.resolver.NoNameservers) as exc:
        raise spf.TempError(f"DNS {exc}") from exc
    return found


spf.DNSLookup = _lookup


def _check(resolver: dns.resolver.Resolver | None, ip: str, sender: str, helo: str) -> str:
    if resolver is not None:
        _asking.set(resolver)  # this thread's context only (asyncio.to_thread runs in a copy)
    try:
        result, _code, _why = spf.query(i=ip, s=sender, h=helo, timeout=CHECK_SECONDS,
                                        querytime=CHECK_SECONDS).check()
    except Exception:  # pyspf raises for input it cannot parse (an odd HELO): no verdict
        log.info("SPF check of %s from %s failed", sender, ip, exc_info=True)
        return SpfResult.permerror.value
    result = str(result).lower()
    return result if result in {r.value for r in SpfResult} else SpfResult.permerror.value


# A result is kept this long for the same client address, sender and HELO: a sender's burst is
# checked once (a DNS cache would keep its records as long; a record changed meanwhile counts after
# this). A temperror is never kept.
KEEP_SECONDS = 60.0
KEEP_AT_MOST = 10_000


class SpfChecker:
    """SPF checks asking one resolver (None: pyspf's own, the system's), with the recent results."""

    def __init__(self, resolver: dns.resolver.Resolver | None) -> None:
        self.resolver = resolver
        self._kept: dict[tuple[str, str, str], tuple[str, float]] = {}

    async def check(self, *, ip: str, mail_from: str, helo: str) -> str:
        """The SPF result of `mail_from` (or of the HELO name for a bounce's empty sender) sent from `ip`."""
        key = (ip, mail_from.lower(), helo.lower())
        now = time.monotonic()
        kept = self._kept.get(key)
        if kept is not None and kept[1] > now:
            return kept[0]
        sender = mail_from or (f"postmaster@{helo}" if helo else "")
        result = await asyncio.to_thread(_check, self.resolver, ip, sender, helo)
        if result != SpfResult.temperror.value:
            if len(self._kept) >= KEEP_AT_MOST:
                self._kept = {k: v for k, v in self._kept.items() if v[1] > now}
                if len(self._kept) >= KEEP_AT_MOST:
                    self._kept.clear()
            self._kept[key] = (result, now + KEEP_SECONDS)
        return result
