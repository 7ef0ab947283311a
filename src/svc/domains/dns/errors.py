from __future__ import annotations

from svc.errors import BadRequest, Conflict, NotFound, ServiceUnavailable


class InvalidDns(BadRequest):
    """A field of a DNS request breaking a rule only the DNS rules know (a record's shape, a name
    outside the zone): InvalidDns.of_field(field, predicate)."""


class ZoneNotFound(NotFound):
    default_message = "No such zone in this org"


class RRsetNotFound(NotFound):
    default_message = "No such record set in this zone"


class ZoneTaken(Conflict):
    code = "zone_taken"
    default_message = ("This zone, or a zone overlapping it, is held by another org: if the domain is yours, ask "
                       "that org to delete it")


class ManagedRRset(Conflict):
    code = "managed_rrset"
    default_message = ("This record set is managed by svc and cannot be changed: svc keeps the SOA and the zone's own "
                       "NS records itself; use another name or type")


class CnameConflict(Conflict):
    code = "cname_conflict"
    default_message = ("A CNAME cannot be at the zone apex nor beside another record type on the same name: delete "
                       "the other records at that name first, or use A and AAAA records")


class DnssecOff(Conflict):
    code = "dnssec_off"
    default_message = "DNSSEC is off for this zone: enable it before recording DS records"


class DsByRegistrar(Conflict):
    code = "ds_managed"
    default_message = ("svc bought this domain and sends its DS to the registrar itself (registrarDs): there is "
                       "nothing to record; turn DNSSEC off and on instead")


class DnsNotConfigured(ServiceUnavailable):
    code = "dns_not_configured"
    default_message = "DNS is turned off in this deployment (no nameserver is configured)"
