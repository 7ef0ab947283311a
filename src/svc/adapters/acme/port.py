"""The ACME port: what svc needs of a certificate authority speaking ACME (RFC 8555): an account,
certificates for names proven by DNS-01 (svc's own nameserver answers) or HTTP-01 (svc's edge
answers), and when to renew (ACME Renewal Information, RFC 9773, where the CA offers it).

How a challenge is published is the caller's (ChallengeSolver): the port knows nothing of the
store, the nameserver or the edge."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Protocol


class Method(StrEnum):
    dns01 = "dns-01"
    http01 = "http-01"


@dataclass(frozen=True)
class Issued:
    """A certificate: the chain as the CA gave it, its key (PEM, for the caller to seal), when it
    expires and who issued it."""

    fullchain_pem: str
    key_pem: str
    not_before: datetime
    not_after: datetime
    issuer: str
    names: tuple[str, ...]


class ChallengeSolver(Protocol):
    async def publish(self, method: Method, name: str, token: str, value: str) -> None:
        """Make the CA's check find `value`: DNS-01, a TXT record at `name` (already
        `_acme-challenge.<domain>`); HTTP-01, `value` at `/.well-known/acme-challenge/<token>` of
        the domain `name`."""
        ...

    async def withdraw(self, method: Method, name: str, token: str, value: str) -> None: ...


class AcmeErrorKind(StrEnum):
    unavailable = "unavailable"  # the CA did not answer: try again later
    rate_limited = "rate_limited"  # the CA's limit: try again after retry_after
    rejected = "rejected"  # the CA refused the order or a challenge failed: its words say why
    caa = "caa"  # a CAA record forbids this CA


class AcmeError(Exception):
    def __init__(self, kind: AcmeErrorKind, message: str, *, retry_after: datetime | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.retry_after = retry_after


class Acme(Protocol):
    description: str  # for the banner: "ACME at https://acme-v02.api.letsencrypt.org/directory"

    async def issue(self, names: list[str], method: Method, solver: ChallengeSolver) -> Issued:
        """Order, prove every name by `method`, finalize with a new key, download. AcmeError."""
        ...

    async def renewal_time(self, fullchain_pem: str) -> datetime | None:
        """When to renew: a time in the window the CA suggests (ARI), or None when it offers none."""
        ...

    async def caa_identities(self) -> tuple[str, ...]:
        """The domains a CAA record names to allow this CA (its directory's caaIdentities; empty when
        it does not say). AcmeError."""
        ...

    def account_key_pem(self) -> str:
        """The account's key (PEM): generated once by the caller's first call, for it to keep sealed."""
        ...


# Makes the Acme of svc's settings for an account key (None: a new one); the certificates area keeps
# the key sealed in the store and hands it back (svc.app builds this from SVC_ACME_*).
AcmeFactory = Callable[[str | None], Acme]
