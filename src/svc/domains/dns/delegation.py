"""Whether the public DNS sends a zone to svc's nameservers, and proof of control of a name there.

svc answers for every zone an org creates at once, delegated or not: its own answers say nothing of
who controls a name. What counts is the public DNS, as seen through the resolver that stands for it
(the Resolver port: SVC_DNS_RESOLVER, or the system resolver), never svc's own nameserver:

- a zone is **delegated** when the NS set the public DNS gives for its name (the parent's referral,
  or the zone's own answer through a recursive resolver) is svc's nameservers, no more, no less;
- control of a name is **proven** by the public DNS answering, at `_svc-verify.<name>`, the TXT value
  svc derives for the org claiming it (`claim`): only whoever runs the name's DNS can publish it.

With SVC_TRUST_OWN_ZONES (a local run, no public DNS) every zone counts as delegated without a
lookup. Words for people are made here; the service decides what a check changes."""

from __future__ import annotations

from dataclasses import dataclass

from svc.adapters.resolver.port import Lookup, Outcome, Resolver
from svc.kit.clock import utcnow
from svc.kit.crypto import Keyring
from svc.models import Zone

PROOF_PREFIX = "_svc-verify."
MAX_SEEN = 500  # the column's size


@dataclass(frozen=True)
class Seen:
    """What a delegation check saw. `delegated` None: the public DNS could not be asked (the
    zone keeps what it had); `words`: what it answered, when that is not svc's nameservers."""

    delegated: bool | None
    words: str | None


def _bare(name: str) -> str:
    return name.rstrip(".")


def _names(values: tuple[str, ...]) -> str:
    return ", ".join(_bare(v) for v in values)


def _unanswered(resolver: Resolver, lookup: Lookup) -> str:
    if lookup.outcome is Outcome.timeout:
        return f"{resolver.description} did not answer"
    return f"{resolver.description} could not answer ({lookup.detail or 'no usable answer'})"


def seen(resolver: Resolver, zone: str, ours: list[str], lookup: Lookup) -> Seen:
    """The public DNS's NS answer for `zone` against svc's nameservers (`ours`, absolute)."""
    if lookup.outcome is Outcome.found:
        if set(lookup.values) == {n.lower() for n in ours}:
            return Seen(True, None)
        if set(lookup.values) & {n.lower() for n in ours}:
            return Seen(False, f"the parent lists {_names(lookup.values)}: every nameserver must be svc's "
                               f"({_names(tuple(ours))})")
        return Seen(False, f"the parent lists {_names(lookup.values)}")
    if lookup.outcome is Outcome.nxdomain:
        return Seen(False, f"{_bare(zone)} does not exist in the public DNS (is it registered?)")
    if lookup.outcome is Outcome.no_answer:
        return Seen(False, f"the public DNS has no nameservers for {_bare(zone)} itself: it lies inside its "
                           "parent's zone")
    return Seen(None, _unanswered(resolver, lookup)[:MAX_SEEN])


async def check(resolver: Resolver, zone: str, ours: list[str], *, trusted: bool) -> Seen:
    if trusted:
        return Seen(True, None)
    return seen(resolver, zone, ours, await resolver.nameservers(zone))


def note(zone: Zone, found: Seen) -> None:
    """What a check saw, on the zone's row. A check that could not ask keeps what the zone had."""
    zone.delegation_checked_at = utcnow()
    if found.delegated is not None:
        zone.delegated = found.delegated
    zone.delegation_seen = found.words


def not_delegated(zone: str, words: str | None) -> str:
    """A sentence for a hostname's lastError, a refusal: why svc's zone proves nothing yet."""
    said = words or "it has not been checked yet"
    return f"{_bare(zone)} is not delegated to svc's nameservers yet: {said}"[:MAX_SEEN]


# --- proof of control by a TXT record ---

@dataclass(frozen=True)
class Claim:
    """The TXT record that proves an org controls `name` in the public DNS."""

    name: str
    value: str

    def as_details(self) -> dict[str, str]:
        return {"type": "TXT", "name": self.name, "value": self.value}


def claim(keys: Keyring, org_id: str, name: str) -> Claim:
    """The same for the same org and name every time (derived, not stored), and another org's is
    not known to it: a claim names what to publish before anything is stored."""
    bare = _bare(name).lower()
    return Claim(name=PROOF_PREFIX + bare, value="svc-claim-" + keys.sign(f"claim {org_id} {bare}")[:32])


async def proven(resolver: Resolver, wanted: Claim) -> bool:
    """Whether the public DNS answers the claim's TXT value at its name."""
    lookup = await resolver.txt(wanted.name)
    return lookup.outcome is Outcome.found and any(v.strip().strip('"').strip() == wanted.value
                                                   for v in lookup.values)
