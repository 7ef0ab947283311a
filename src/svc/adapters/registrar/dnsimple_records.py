"""DNSimple's TLD list and delegation signer (DS) records in the port's terms (dnsimple.py calls
them; the shapes are DNSimple's documented fixtures, docs/notes/registrar-apis.md):

- `GET /v2/tlds?page=N&per_page=100` (not under an account) lists the TLDs DNSimple supports, a
  page at a time: `{"data": [{"tld": "ac", "registration_enabled": true, ...}], "pagination":
  {"current_page", "per_page", "total_entries", "total_pages"}}`. The ones open for registration
  are the port's `tlds()`.
- `GET /v2/{account}/domains/{name}/ds_records` lists the DS records DNSimple sends the registry:
  `{"data": [{"id", "domain_id", "algorithm": "13", "digest": "684a...", "digest_type": "2",
  "keytag": "2371", "created_at", "updated_at"}], "pagination": ...}`; `POST` with
  `{"algorithm", "digest", "digest_type", "keytag"}` (strings) adds one (201, the record);
  `DELETE .../ds_records/{id}` removes one (204). The port's `set_ds` lists, removes what is not
  wanted, then adds what is missing."""

from __future__ import annotations

import re
from typing import Any

from svc.adapters.registrar.port import RegistrarError, RegistrarRejected

_DS = re.compile(r"^(\d{1,5}) (\d{1,3}) (\d{1,3}) ([0-9A-Fa-f]{8,128})$")
PER_PAGE = 100
MAX_PAGES = 20  # 2,000 entries: DNSimple lists about 700 TLDs


def ds_text(record: Any) -> str:
    """A listed or created DS record as zone-file text, digest uppercase."""
    if not isinstance(record, dict):
        raise _shape()
    try:
        parts = [str(int(str(record[key]))) for key in ("keytag", "algorithm", "digest_type")]
        digest = record["digest"]
    except (KeyError, ValueError):
        raise _shape() from None
    if not isinstance(digest, str):
        raise _shape()
    return " ".join([*parts, digest.upper()])


def ds_body(text: str) -> dict[str, str]:
    """The body that creates the DS record `text` ("12345 13 2 3A1F...")."""
    match = _DS.match(" ".join(text.split()))
    if match is None:
        raise RegistrarRejected(f"{text[:40]!r} is not a DS record (key tag, algorithm, digest type, digest)",
                                field="ds")
    return {"keytag": str(int(match[1])), "algorithm": str(int(match[2])), "digest_type": str(int(match[3])),
            "digest": match[4].upper()}


def normal_ds(text: str) -> str:
    body = ds_body(text)
    return f"{body['keytag']} {body['algorithm']} {body['digest_type']} {body['digest']}"


def listed(data: Any) -> list[dict[str, Any]]:
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise _shape()
    return data


def registrable_tlds(data: Any) -> list[str]:
    """The TLDs of one page of the list that are open for registration."""
    found: list[str] = []
    for item in listed(data):
        tld = item.get("tld")
        if not isinstance(tld, str):
            raise _shape("the TLD list")
        if item.get("registration_enabled", True) is not False:
            found.append(tld.lower().lstrip("."))
    return found


def _shape(what: str = "the DS records") -> RegistrarError:
    return RegistrarError(f"DNSimple answered {what} in a shape its API does not document")
