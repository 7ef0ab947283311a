"""DNSimple's terms for the port's values, and back: the port's Contact as a registrant contact
(`POST /v2/{account}/contacts`: the name split into first and last, the city also as
state_province, which DNSimple requires and the spec's contact lacks, the country upper case, the
phone in DNSimple's "+CC.NUMBER" form); and a refusal of DNSimple's with its field errors named
as the port's fields."""

from __future__ import annotations

import re
from typing import Any

from svc.adapters.registrar.port import Contact, RegistrarRejected

# Country calling codes of one and two digits (ITU-T E.164); every other code has three, and no
# code is a prefix of another, so the first digits of an international number say where it ends.
_CC_ONE = frozenset({"1", "7"})
_CC_TWO = frozenset("20 27 30 31 32 33 34 36 39 40 41 43 44 45 46 47 48 49 51 52 53 54 55 56 57 58 "
                    "60 61 62 63 64 65 66 81 82 84 86 90 91 92 93 94 95 98".split())

# DNSimple's field names (contacts, registrations, renewals, delegation) in the port's terms.
FIELDS = {
    "first_name": "contact.name", "last_name": "contact.name", "address1": "contact.street",
    "city": "contact.city", "state_province": "contact.city", "postal_code": "contact.postalCode",
    "country": "contact.country", "email": "contact.email", "phone": "contact.phone",
    "registrant_id": "contact", "period": "years", "premium_price": "amountCents",
}


def contact_body(contact: Contact, label: str) -> dict[str, Any]:
    first, last = _split_name(contact.name)
    return {"label": label, "first_name": first, "last_name": last, "address1": contact.street.strip(),
            "city": contact.city.strip(), "state_province": contact.city.strip(),
            "postal_code": contact.postal_code.strip(), "country": contact.country.strip().upper(),
            "email": contact.email.strip(), "phone": phone(contact.phone)}


def _split_name(name: str) -> tuple[str, str]:
    words = name.split()
    if not words:
        raise RegistrarRejected("the registrant's name is empty", field="contact.name")
    return (words[0], words[0]) if len(words) == 1 else (" ".join(words[:-1]), words[-1])


def phone(raw: str) -> str:
    """+14012345678 / +1 (401) 234-5678 / 0044 20... -> +1.4012345678 (DNSimple's form). Anything else
    is sent as given, for DNSimple to judge (its refusal names contact.phone)."""
    compact = re.sub(r"[\s()/-]", "", raw)
    if compact.startswith("00"):
        compact = "+" + compact[2:]
    if re.fullmatch(r"\+\d{1,3}\.\d{4,14}", compact):
        return compact
    if not re.fullmatch(r"\+\d{8,15}", compact):
        return raw.strip()
    digits = compact[1:]
    size = 1 if digits[0] in _CC_ONE else 2 if digits[:2] in _CC_TWO else 3
    return f"+{digits[:size]}.{digits[size:]}"


MAX_WORDS = 300


def words(message: str) -> str:
    text = " ".join(message.split())
    return text if len(text) <= MAX_WORDS else text[: MAX_WORDS - 1] + "…"


def rejected(what: str, message: str, errors: dict[str, Any], field: str | None = None) -> RegistrarRejected:
    """DNSimple's refusal in its words, its field errors spelled out (`phone: can't be blank, ...`)."""
    details = "".join(f"; {key}: {', '.join(map(str, said)) if isinstance(said, list) else said}"
                      for key, said in errors.items())
    named = next((FIELDS[key] for key in errors if key in FIELDS), None)
    return RegistrarRejected(words(f"DNSimple refused {what}: {message}{details}"), field=named or field)
