from __future__ import annotations

from svc.errors import BadRequest, Conflict, NotFound, ServiceUnavailable


class InvalidDns(BadRequest):
    """A field of a DNS request breaking a rule only the DNS rules know (a record's shape, a name
    outside the zone). details.errors has the same entries as every validation failure (errors.py):
    the field, a machine reason and a sentence naming the field, never the input."""

    @classmethod
    def of(cls, field: str, predicate: str, reason: str = "value_error") -> InvalidDns:
        message = f"{field} {predicate}"
        return cls(message, details={"errors": [{"field": field, "reason": reason, "message": message}]})


class ZoneNotFound(NotFound):
    default_message = "No such zone in this org"


class RRsetNotFound(NotFound):
    default_message = "No such record set in this zone"


class ZoneTaken(Conflict):
    code = "zone_taken"
    default_message = "This zone, or a zone overlapping it, is held by another org"


class ManagedRRset(Conflict):
    code = "managed_rrset"
    default_message = "This record set is managed by svc and cannot be changed"


class CnameConflict(Conflict):
    code = "cname_conflict"
    default_message = "A CNAME cannot be at the zone apex nor beside another record type on the same name"


class DnssecOff(Conflict):
    code = "dnssec_off"
    default_message = "DNSSEC is off for this zone: enable it before recording DS records"


class DnsNotConfigured(ServiceUnavailable):
    code = "dns_not_configured"
    default_message = "DNS is turned off in this deployment (no nameserver is configured)"
