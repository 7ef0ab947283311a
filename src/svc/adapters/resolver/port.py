"""The resolver port: what ownership checks need of the public DNS (custom hostnames' records, a
zone's delegation). Each lookup says what was seen (an outcome and the values), never raises for
DNS reasons: the caller turns outcomes into words for the owner.

Names are absolute or relative text as a person writes them ("_svc-verify.www.example.com");
values are decoded text: a TXT record's strings joined, a CNAME's target absolute and lowercase
("edge.svc.localhost.")."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol


class Outcome(StrEnum):
    # The name has records of the type asked: `values` holds them.
    found = "found"
    # The name exists but has no record of this type (NOERROR, empty answer).
    no_answer = "no_answer"
    # The name does not exist (NXDOMAIN).
    nxdomain = "nxdomain"
    # The resolver answered with an error (SERVFAIL, REFUSED...): `detail` names it.
    failed = "failed"
    # The resolver did not answer in time (or could not be reached).
    timeout = "timeout"


@dataclass(frozen=True)
class Lookup:
    outcome: Outcome
    values: tuple[str, ...] = ()
    # For `failed`: the resolver's answer code ("REFUSED", "SERVFAIL") or a short reason.
    detail: str = ""


class Resolver(Protocol):
    # For sentences: "the resolver at 127.0.0.1:5353", "the system resolver (192.0.2.53)".
    description: str

    async def txt(self, name: str) -> Lookup:
        """The TXT records of `name`, each one's strings joined into one text."""
        ...

    async def cname(self, name: str) -> Lookup:
        """The CNAME of `name` (its target, absolute and lowercase) when it has one."""
        ...

    async def caa(self, name: str) -> Lookup:
        """The CAA records of `name` (RFC 8659), each as "<tag> <value>" ("issue letsencrypt.org")."""
        ...

    async def ds(self, name: str) -> Lookup:
        """The DS records the parent serves for the zone `name` ("12345 13 2 3A1F...", digest in
        hex): whether a DS sent to the registrar has reached the parent, or left it."""
        ...

    async def nameservers(self, name: str) -> Lookup:
        """The nameservers the DNS sends `name` to (absolute, lowercase, sorted): its NS set as
        answered, or as the parent's referral names it (an authoritative parent answers with one).
        `no_answer`: the name exists but is not delegated (it lies inside its parent's zone)."""
        ...
