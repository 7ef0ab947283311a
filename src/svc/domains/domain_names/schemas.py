"""Request and response bodies of the domains area, as decisions.md spells them."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, StringConstraints, field_validator
from pydantic.config import JsonDict

from svc.kit.api import ApiInput, ApiModel, Timestamp, trimmed

_PHONE = re.compile(r"^\+\d{1,3}\.\d{4,14}$")
_COUNTRY = re.compile(r"^[A-Z]{2}$")
# A registrant's email: one @, something on each side, a dot in the domain, no spaces.
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")




class CheckResult(ApiModel):
    name: str
    available: bool
    price_cents: int | None = Field(description="A registration's price for a year, in cents; null when not for sale")
    renewal_cents: int | None = Field(description="A year's renewal, in cents")


class CheckResults(ApiModel):
    results: list[CheckResult]


class ContactIn(ApiInput):
    """The registrant: passed to the registrar, never stored by svc. The registrar's verification
    email goes to `email`."""

    # Blank is not a value: the registrar would refuse it after the payment (refunded, but a round trip).
    name: Annotated[str, StringConstraints(min_length=1, max_length=200), trimmed(1)]
    email: str = Field(min_length=3, max_length=254, json_schema_extra={"pattern": _EMAIL.pattern})
    phone: str = Field(min_length=6, max_length=20, description="+<country code>.<number>, as +1.5555551234",
                       json_schema_extra={"pattern": _PHONE.pattern})
    street: Annotated[str, StringConstraints(min_length=1, max_length=200), trimmed(1)]
    city: Annotated[str, StringConstraints(min_length=1, max_length=100), trimmed(1)]
    postal_code: Annotated[str, StringConstraints(min_length=1, max_length=20), trimmed(1)]
    country: str = Field(min_length=2, max_length=2, description="ISO 3166-1 alpha-2, as US",
                         json_schema_extra={"pattern": "^[A-Za-z]{2}$"})

    @field_validator("email")
    @classmethod
    def _email(cls, v: str) -> str:
        if not _EMAIL.match(v):
            raise ValueError("must be an email address (name@example.com)")
        return v

    @field_validator("phone")
    @classmethod
    def _phone(cls, v: str) -> str:
        if not _PHONE.match(v):
            raise ValueError("must be +<country code>.<number>, as +1.5555551234")
        return v

    @field_validator("country")
    @classmethod
    def _country(cls, v: str) -> str:
        if not _COUNTRY.match(v.upper()):
            raise ValueError("must be a two-letter country code (ISO 3166-1), as US")
        return v.upper()


# The document states the canonical form (lowercase, one label under a TLD of letters), with the
# lowercase Latin letters IDNA takes as they are (a name the API accepts must not break the
# document: schemathesis sends one, as a client may); names.py also takes uppercase, a trailing dot
# and any unicode IDNA takes, and words every refusal.
_LABEL_START = "a-z0-9\u00e0-\u00f6\u00f8-\u00ff"
_LABEL = rf"[{_LABEL_START}]([{_LABEL_START}-]{{0,61}}[{_LABEL_START}])?"
_NAME_DOC: JsonDict = {"format": "idn-hostname", "pattern": rf"^{_LABEL}\.[a-z]{{2,63}}$"}
_NAME_SAID = ("A registrable name, such as example.com (uppercase, a trailing dot and unicode are taken too; "
              "a subdomain is not)")


_SEARCH_DOC: JsonDict = {"format": "idn-hostname", "pattern": rf"^{_LABEL}(\.[a-z]{{2,63}})?$"}
_SEARCH_SAID = (_NAME_SAID + ", or one word (example): that word under the registrar's TLDs, 10 at most, "
                ".com, .net, .org, .io, .dev first where it sells them")


class CheckRequest(ApiInput):
    names: list[Annotated[str, Field(min_length=1, max_length=260, json_schema_extra=_SEARCH_DOC,
                                     description=_SEARCH_SAID)]] = Field(
        min_length=1, max_length=20, description="Names to price, as written (example.com), and at most one word to "
                                                 "search (example)")


class PurchaseRequest(ApiInput):
    name: str = Field(min_length=1, max_length=260, json_schema_extra=_NAME_DOC, description=_NAME_SAID)
    years: int = Field(default=1, ge=1, le=10)
    contact: ContactIn


class ImportRequest(ApiInput):
    name: str = Field(min_length=1, max_length=260, json_schema_extra=_NAME_DOC, description=_NAME_SAID)


class RenewRequest(ApiInput):
    years: int = Field(ge=1, le=10)


class AutoRenewRequest(ApiInput):
    enabled: bool


class LockRequest(ApiInput):
    locked: bool


class Domain(ApiModel):
    name: str
    status: Literal["pending_payment", "registering", "setting_ns", "active", "expired", "transferred_out"]
    source: Literal["purchase", "import"]
    expires_at: Timestamp | None
    locked: bool
    auto_renew: bool
    nameservers: list[str]
    last_error: str | None = Field(default=None, description="Why a purchase stopped where it is, in words")
    notice: str | None = Field(default=None, description="What a person should know of this answer, in words: "
                                                         "where the registrar's email went, that the "
                                                         "registrar-side auto-renew stays on")


class DomainList(ApiModel):
    domains: list[Domain]


class HistoryLine(ApiModel):
    at: Timestamp
    action: str
    detail: str


class DomainDetail(Domain):
    history: list[HistoryLine]


class AuthCode(ApiModel):
    code: str
