"""CAA (RFC 8659), read before an order: a name's owner may allow only some CAs to issue for it.
svc asks the public DNS as the CA will and, when the records forbid svc's CA, says so in words and
orders nothing: a refused order would count against the CA's rate limits and say less.

The relevant record set is the name's own CAA set, else its parent's, and so on up (the first
that is not empty); `issuewild` decides for a wildcard when the set has one, else `issue`. A set
with neither allows every CA. When the DNS does not answer, svc cannot tell and leaves it to the CA."""

from __future__ import annotations

from svc.adapters.resolver.port import Outcome, Resolver


def _domain(value: str) -> str:
    """The CA domain a property value names ("letsencrypt.org; validationmethods=dns-01"), or ""
    for none (";": no CA may issue)."""
    return value.partition(";")[0].strip().lower().rstrip(".")


async def refusal(resolver: Resolver, name: str, identities: tuple[str, ...]) -> str | None:
    """Why the CAA records of `name` forbid a CA known by `identities` (None: they allow it, or
    there are none, or they cannot be read)."""
    if not identities:
        return None
    wildcard = name.startswith("*.")
    labels = name.removeprefix("*.").rstrip(".").lower().split(".")
    # Up to the name under the top-level domain: no registry publishes CAA at a TLD.
    for start in range(len(labels) - 1):
        owner = ".".join(labels[start:])
        found = await resolver.caa(owner + ".")
        if found.outcome in (Outcome.failed, Outcome.timeout):
            return None
        if found.outcome is not Outcome.found or not found.values:
            continue
        properties = [value.partition(" ") for value in found.values]
        issue = [_domain(v) for tag, _, v in properties if tag == "issue"]
        wild = [_domain(v) for tag, _, v in properties if tag == "issuewild"]
        allowed = wild if wildcard and wild else issue
        if not allowed:
            return None  # only iodef (or unknown tags): every CA may issue
        if any(domain in identities for domain in allowed):
            return None
        who = ", ".join(sorted({d for d in allowed if d})) or "no CA"
        tag = "issuewild" if wildcard and wild else "issue"
        return (f"a CAA record at {owner} ({tag}) allows {who} to issue certificates for {name}, not this CA "
                f"({', '.join(identities)}): add the record {owner}. CAA 0 {tag} \"{identities[0]}\" to allow it")
    return None
