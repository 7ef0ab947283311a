"""The registrar port: what svc needs of the company that registers domain names for an org
(docs/domains.md). Prices and availability, a payment taken before the registration and given back
when the registration fails for good, the registration itself, its nameservers, renewal, transfer
lock, auto-renew, the auth code for a transfer out, and the registration as the registrar has it
(the source of truth for expiry, lock and NS).

Every call that spends money takes an idempotency key: the same key is charged once, however often
it is sent (a crash between sending and recording the answer, then a resend). The areas import this
module only; fake.py is a real HTTP server with its own state (and client.py speaks its API), for
the tests and `svc serve` with SVC_REGISTRAR=fake."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


@dataclass(frozen=True)
class Quote:
    """A name as the registrar would sell it: prices in cents (None when it is not for sale)."""

    name: str
    available: bool
    price_cents: int | None
    renewal_cents: int | None


@dataclass(frozen=True)
class Contact:
    """The registrant: passed to the registrar, never stored by svc. The registrar's verification
    email goes to `email`."""

    name: str
    email: str
    phone: str
    street: str
    city: str
    postal_code: str
    country: str  # ISO 3166-1 alpha-2, uppercase


@dataclass(frozen=True)
class Registration:
    """A domain in the registrar's account, as the registrar has it."""

    name: str
    expires_at: datetime
    locked: bool
    auto_renew: bool
    nameservers: tuple[str, ...]


class RegistrarError(Exception):
    """The registrar failed, did not answer in time, or answered something that is not its API
    (5xx, network, garbage): the same call may succeed later. Said in words, never with a key."""


class PaymentDeclined(Exception):
    """The registrar could not take the payment (the account's card or balance); its words."""


class RegistrarRejected(Exception):
    """The registrar refused the input for good (a contact field, a term it does not sell): a
    retry of the same request cannot help. `field` names the input when the registrar says which."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class NameUnavailable(Exception):
    """The name cannot be registered: somebody holds it, or the registry reserves it."""


class NotInAccount(Exception):
    """The registrar's account does not hold the domain (transferred away, or never there)."""


class Registrar(Protocol):
    name: str  # "fake": for the banner and the docs
    description: str  # "the fake registrar at http://127.0.0.1:1234": for messages

    async def check(self, names: list[str]) -> list[Quote]:
        """Availability and prices of each name, in the order asked."""
        ...

    async def tlds(self) -> list[str]:
        """The top-level domains the registrar registers names under ("com", "dev"), lowercase,
        without the dot: what a search for a bare word is expanded over."""
        ...

    async def charge(self, *, name: str, years: int, amount_cents: int, key: str) -> str:
        """Take the payment for registering `name` for `years`; the charge's id. The same `key`
        answers the same charge (charged once). PaymentDeclined when it cannot be taken."""
        ...

    async def refund(self, charge_id: str) -> None:
        """Give a charge back in full (a refunded charge is refunded once, however often asked)."""
        ...

    async def register(self, *, name: str, years: int, contact: Contact, charge_id: str) -> Registration:
        """Register `name`, paid by `charge_id`. Registering again with the same charge answers the
        registration it made. NameUnavailable, RegistrarRejected, and PaymentDeclined where the
        registrar takes the money with the registration itself (DNSimple: its `charge` only holds
        the quote)."""
        ...

    async def set_nameservers(self, name: str, nameservers: list[str]) -> Registration: ...

    async def domain(self, name: str) -> Registration:
        """The registration as the registrar has it; NotInAccount when the account lacks it."""
        ...

    async def renew(self, name: str, *, years: int, key: str) -> Registration:
        """Renew for `years`, charged once per `key`. PaymentDeclined, NotInAccount."""
        ...

    async def set_lock(self, name: str, locked: bool) -> Registration: ...

    async def set_auto_renew(self, name: str, enabled: bool) -> Registration: ...

    async def set_ds(self, name: str, ds: list[str]) -> list[str]:
        """Make the DS records the registrar sends the registry for `name` exactly `ds` (zone-file
        text, "12345 13 2 3A1F..."; [] removes them all): those missing are added, the others
        removed, so a resend does nothing more. What the registrar holds afterwards. NotInAccount."""
        ...

    async def auth_code(self, name: str) -> str:
        """The code another registrar asks for a transfer out (never recorded by svc)."""
        ...

    async def aclose(self) -> None: ...
