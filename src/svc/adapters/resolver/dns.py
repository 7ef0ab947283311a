"""The Resolver port with dnspython's stub resolver (dns.asyncresolver), asking one configured
resolver address (SVC_DNS_RESOLVER, or the managed PowerDNS) or the system's (/etc/resolv.conf).

No cache: a record the owner just created must be seen on the next check. Every DNS failure is
an Outcome (port.py), never an exception."""

from __future__ import annotations

import dns.asyncresolver
import dns.exception
import dns.message
import dns.name
import dns.rcode
import dns.rdatatype
import dns.resolver

from svc.adapters.resolver.port import Lookup, Outcome

# One lookup's whole budget (retries included): a check runs two lookups at once, and the
# verification cycle runs a few checks at a time.
LIFETIME_SECONDS = 3.0


def _address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class DnsResolver:
    def __init__(self, resolver: dns.asyncresolver.Resolver, description: str) -> None:
        self._resolver = resolver
        self.description = description

    @classmethod
    def at(cls, host: str, port: int, *, lifetime: float = LIFETIME_SECONDS) -> DnsResolver:
        """Ask only the resolver (or authoritative nameserver) at host:port."""
        resolver = dns.asyncresolver.Resolver(configure=False)
        resolver.nameservers = [host]
        resolver.port = port
        resolver.lifetime = lifetime
        resolver.timeout = min(lifetime, 2.0)
        resolver.cache = None
        return cls(resolver, f"the resolver at {_address(host, port)}")

    @classmethod
    def system(cls, *, lifetime: float = LIFETIME_SECONDS) -> DnsResolver:
        """The system's resolvers (/etc/resolv.conf)."""
        try:
            resolver = dns.asyncresolver.Resolver(configure=True)
        except (dns.resolver.NoResolverConfiguration, OSError):
            # No resolv.conf: localhost, as the C library would. The outcome says it did not answer.
            resolver = dns.asyncresolver.Resolver(configure=False)
            resolver.nameservers = ["127.0.0.1"]
        resolver.lifetime = lifetime
        resolver.timeout = min(lifetime, 2.0)
        resolver.cache = None
        servers = ", ".join(str(n) for n in resolver.nameservers[:3])
        return cls(resolver, f"the system resolver ({servers})")

    def blocking(self) -> dns.resolver.Resolver:
        """The same resolver for a blocking library run in a thread (pyspf, for inbound mail's SPF
        checks): the same addresses, port and budget."""
        twin = dns.resolver.Resolver(configure=False)
        twin.nameservers = list(self._resolver.nameservers)
        twin.port = self._resolver.port
        twin.lifetime, twin.timeout = self._resolver.lifetime, self._resolver.timeout
        twin.cache = None
        return twin

    async def txt(self, name: str) -> Lookup:
        return await self._lookup(name, "TXT")

    async def cname(self, name: str) -> Lookup:
        return await self._lookup(name, "CNAME")

    async def caa(self, name: str) -> Lookup:
        return await self._lookup(name, "CAA")

    async def ds(self, name: str) -> Lookup:
        return await self._lookup(name, "DS")

    async def nameservers(self, name: str) -> Lookup:
        answer = await self._ask(name, "NS")
        if isinstance(answer, Lookup):
            return answer
        qname = answer.qname
        found = [r for r in answer.response.answer if r.rdtype == dns.rdatatype.NS and r.name == qname]
        if not found:
            # An authoritative parent (not a recursive resolver) answers with a referral.
            found = [r for r in answer.response.authority if r.rdtype == dns.rdatatype.NS and r.name == qname]
        if not found:
            return Lookup(Outcome.no_answer)
        return Lookup(Outcome.found, values=tuple(sorted({rd.target.to_text().lower() for rd in found[0]})))

    async def _ask(self, name: str, rdtype: str) -> dns.resolver.Answer | Lookup:
        """The resolver's answer, or the Lookup that says why there is none."""
        try:
            qname = dns.name.from_text(name)
            return await self._resolver.resolve(qname, rdtype, raise_on_no_answer=False, search=False)
        except dns.resolver.NXDOMAIN:
            return Lookup(Outcome.nxdomain)
        except dns.resolver.LifetimeTimeout:
            return Lookup(Outcome.timeout)
        except dns.resolver.NoNameservers as exc:
            return Lookup(Outcome.failed, detail=_failure(exc))
        except dns.exception.DNSException as exc:
            return Lookup(Outcome.failed, detail=type(exc).__name__)

    async def _lookup(self, name: str, rdtype: str) -> Lookup:
        answer = await self._ask(name, rdtype)
        if isinstance(answer, Lookup):
            return answer
        # A recursive resolver following a CNAME chain answers the TXT of the chain's end: the
        # records of the type asked are the ones that count (the last rrset of that type).
        want = dns.rdatatype.from_text(rdtype)
        rrsets = [r for r in answer.response.answer if r.rdtype == want]
        if not rrsets:
            return Lookup(Outcome.no_answer)
        rrset = rrsets[-1] if rdtype == "TXT" else rrsets[0]
        if rdtype == "TXT":
            values = tuple(b"".join(rd.strings).decode("utf-8", "replace") for rd in rrset)
        elif rdtype == "DS":
            values = tuple(f"{rd.key_tag} {rd.algorithm} {rd.digest_type} {rd.digest.hex().upper()}" for rd in rrset)
        elif rdtype == "CAA":
            values = tuple(f"{rd.tag.decode('ascii', 'replace').lower()} {rd.value.decode('utf-8', 'replace')}"
                           for rd in rrset)
        else:
            values = tuple(rd.target.to_text().lower() for rd in rrset)
        return Lookup(Outcome.found, values=values)


def _failure(exc: dns.resolver.NoNameservers) -> str:
    """The answer code the resolver gave ("REFUSED", "SERVFAIL"), else the error's kind."""
    for entry in exc.kwargs.get("errors") or []:
        answer = entry[4] if len(entry) > 4 else None
        if isinstance(answer, dns.message.Message):
            return dns.rcode.to_text(answer.rcode())
        error = entry[3] if len(entry) > 3 else None
        if isinstance(error, dns.exception.Timeout):
            return "no answer in time"
        if error is not None:
            return type(error).__name__
    return "no usable answer"
