"""Every Error envelope the pages can meet, said to a person: a title for the page or the message
box, the error's own message (svc's messages are sentences already) and, where it helps, what to
do next. Never the raw JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from svc.errors import AppError

TITLES = {
    400: "That did not work",
    401: "Sign-in needed",
    403: "Not allowed",
    404: "Not found",
    405: "Not allowed",
    409: "That cannot be done now",
    413: "Too large",
    415: "Not a bundle",
    429: "Too many tries",
    503: "Not available right now",
}

# What to do next, by error code, where the message alone leaves a person stuck.
HINTS = {
    "project_limit": "Delete a project you no longer need, or ask the operator of this svc to move the org "
                     "to the pro plan.",
    "org_not_empty": "Delete what the org still holds first; it is listed below.",
    "personal_org": "Your personal org stays as long as your account does.",
    "last_admin": "Make another member an admin first.",
    "already_member": "Change a member's role on the Members page instead.",
    "too_many_invites": "Revoke invites that are no longer needed, or wait for some to be accepted.",
    "op_in_flight": "The project is being deleted; wait until that finishes.",
    "invite_used": "Ask an admin of the org for a new invite.",
    "invite_revoked": "Ask an admin of the org for a new invite.",
    "invite_expired": "Ask an admin of the org for a new invite.",
    "csrf_failed": "Reload the page and send the form again.",
    "unauthorized": "Sign in again.",
    "forbidden": "Ask an admin of the org for a higher role.",
    "rate_limited": "Wait a moment before trying again.",
    "bundle_too_large": "Leave out what the site does not need (node_modules, source maps), or raise "
                        "SVC_MAX_BUNDLE_BYTES on the server.",
    "bad_bundle": "Upload a .tar.gz with svc.json at its root (as `svc deploy` makes it), or drop the site's folder.",
    "unsupported_media_type": "Upload a .tar.gz file (a gzipped tar with svc.json at its root) or a folder.",
    "dns_not_configured": "The operator of this svc turns DNS on by installing PowerDNS (pdns-server and "
                          "pdns-backend-sqlite3) on the server, or with SVC_PDNS_API_URL and SVC_PDNS_API_KEY.",
    "cname_conflict": "Delete the other records at that name first, or give the CNAME a name of its own "
                      "(at the zone itself, use A and AAAA records instead).",
    "managed_rrset": "svc keeps the SOA and the zone's own NS records itself; use another name or type.",
    "zone_taken": "A zone belongs to one org on this svc: if the domain is yours, ask the org holding it to delete it.",
    "hostname_taken": "A hostname serves one project on this svc: remove it from the project that has it first, "
                      "or add another name.",
    "dnssec_off": "Enable DNSSEC first, then record the DS records registered at the parent zone.",
}


@dataclass(frozen=True)
class Said:
    title: str
    message: str
    hint: str | None
    status: int
    code: str
    holdings: dict[str, Any] = field(default_factory=dict)


def say(err: AppError) -> Said:
    details = err.details or {}
    holdings = details.get("holdings") if err.code == "org_not_empty" else None
    return Said(title=TITLES.get(err.status, "Something went wrong on svc's side" if err.status >= 500
                                 else "That did not work"),
                message=err.message, hint=HINTS.get(err.code), status=err.status, code=err.code,
                holdings=holdings if isinstance(holdings, dict) else {})
