"""DNS names and records: parse what a person writes (zone-file text, names relative to the zone)
into what the store keeps and the nameserver gets (absolute names, dnspython's canonical text).

Everything invalid is refused here, before it is stored: PowerDNS takes some things it should not
(an SOA deleted, TTLs out of range, CAA with unknown tags, a CNAME to itself, 70,000-byte TXT; see
the nameserver notes), and a record the nameserver refused later would block every change of its
zone. Each refusal is a 400 naming its field (errors.InvalidDns), except the rules the spec gives
codes of their own: managed_rrset and cname_conflict (409)."""

from __future__ import annotations

import ipaddress
import re
from typing import Any

import dns.exception
import dns.name
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.ANY.CAA
import dns.rdtypes.ANY.TXT
import dns.tokenizer

from svc.adapters.nameserver.port import RRsetData
from svc.domains.dns import errors
from svc.kit.hosts import idna_label

# What an rrset PUT may hold. SOA and the apex NS exist in every zone, managed by svc.
TYPES = ("A", "AAAA", "MX", "SRV", "CAA", "CNAME", "TXT", "NS")
MANAGED_TYPES = frozenset({"SOA"})
# Types whose owner names may have labels with "_" (_svc-verify, _sip._tcp, DKIM's _domainkey
# CNAMEs, _acme-challenge delegations); an A or MX owner is a host name, where "_" is not valid.
UNDERSCORE_TYPES = frozenset({"TXT", "SRV", "CNAME"})
# Types whose content holds names only besides numbers: written lowercase, so comparisons
# (a CNAME to itself, the reconcile's diff) need no case folding.
NAME_TYPES = frozenset({"MX", "SRV", "CNAME", "NS"})
CAA_TAGS = frozenset({"issue", "issuewild", "iodef"})

MIN_TTL, MAX_TTL, DEFAULT_TTL = 60, 86_400, 3_600
MAX_RECORDS = 100  # per rrset
MAX_RECORD_CHARS = 16_384  # the text of one record as sent (a TXT of \DDD escapes is 4x its bytes)
MAX_TXT_BYTES = 4_096  # one TXT record's strings together: PowerDNS serves 70,000 as an empty answer
MAX_RRSET_BYTES = 16_384  # an rrset's rdata on the wire: it must fit in an answer with room to spare
MAX_NAME = 253  # characters of a name without its trailing dot
MAX_LABEL = 63
MAX_DS = 8

_LDH = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
_LDH_UNDERSCORE = re.compile(r"^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?$")
_CAA_DOMAIN = re.compile(r"^([a-z0-9]([a-z0-9-]*[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]*[a-z0-9])?\.?$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_IN = dns.rdataclass.IN


def _bad(field: str, predicate: str) -> errors.InvalidDns:
    return errors.InvalidDns.of_field(field, predicate)


def _idna_label(label: str, field: str) -> str:
    """One label in lowercase punycode (kit.hosts.idna_label: the rule custom hostnames follow too)."""
    try:
        return idna_label(label)
    except ValueError as exc:
        raise _bad(field, str(exc)) from None


# --- zone names ---

def zone_name(text: str, *, field: str = "name") -> str:
    """A zone name as written ("Example.COM", "bücher.example", "example.com.") -> "example.com."
    with every label lowercase LDH or punycode. A zone has at least two labels: svc does not serve
    top-level domains, nor IP addresses."""
    value = text.strip()
    if value.endswith("."):
        value = value[:-1]
    if not value:
        raise _bad(field, "must not be empty")
    if _CONTROL.search(value) or " " in value:
        raise _bad(field, "must not contain spaces or control characters")
    labels = value.split(".")
    if any(not label for label in labels):
        raise _bad(field, "must not have empty labels (two dots in a row, or a leading dot)")
    labels = [_idna_label(label, field) for label in labels]
    for label in labels:
        if label == "*":
            raise _bad(field, "must not be a wildcard: a zone is a domain such as example.com")
        if len(label) > MAX_LABEL:
            raise _bad(field, f"must have labels of at most {MAX_LABEL} characters")
        if not _LDH.match(label):
            raise _bad(field, "may hold only letters, digits and inner hyphens in each label")
    name = ".".join(labels)
    if len(name) > MAX_NAME:
        raise _bad(field, f"must be at most {MAX_NAME} characters")
    if len(labels) < 2:
        raise _bad(field, "must have at least two labels (example.com): svc does not serve top-level domains")
    if labels[-1].isdigit() or _is_ip(name):
        raise _bad(field, "must be a domain name, not an IP address")
    return name + "."


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def enclosing(name: str) -> list[str]:
    """The names a zone holding `name` could have, closest first: the name itself, then each
    parent of at least two labels ("a.b.example.com." -> itself, "b.example.com.", "example.com.")."""
    labels = name.lower().rstrip(".").split(".")
    return [".".join(labels[i:]) + "." for i in range(len(labels) - 1)]


def is_within(name: str, zone: str) -> bool:
    """`name` is `zone` or below it (both absolute, lowercase)."""
    return name == zone or name.endswith("." + zone)


def relative(name: str, zone: str) -> str:
    """The owner name as the API shows it: "@" for the apex, else relative to the zone."""
    return "@" if name == zone else name[: -len(zone) - 1]


# --- owner names and types ---

def record_type(text: str) -> str:
    """The path's {type}: one of TYPES, uppercase. SOA is svc's own: 409 managed_rrset."""
    upper = text.upper()
    if upper in MANAGED_TYPES:
        raise errors.ManagedRRset("The SOA record set is managed by svc and the nameserver: use another type",
                                  details={"type": upper})
    if upper not in TYPES:
        raise _bad("type", "must be one of: " + ", ".join(TYPES))
    if text != upper:
        raise _bad("type", f"must be written in uppercase ({upper})")
    return upper


def owner_name(zone: str, text: str, rtype: str) -> str:
    """The path's {name} -> an absolute owner name in `zone`. "@" is the apex; other names are
    relative ("www", "a.b", "*.dev", "_sip._tcp"), or absolute with a trailing dot when inside the
    zone. "_" is allowed in the labels of TXT, SRV and CNAME owners only; "*" only as a whole first
    label."""
    value = text.strip()
    if value == "@":
        return zone
    if not value:
        raise _bad("name", "must not be empty: use @ for the zone apex")
    if _CONTROL.search(value) or " " in value:
        raise _bad("name", "must not contain spaces or control characters")
    absolute = value.endswith(".")
    if absolute:
        value = value[:-1]
    labels = value.split(".")
    if any(not label for label in labels):
        raise _bad("name", "must not have empty labels (two dots in a row, or a leading dot)")
    pattern = _LDH_UNDERSCORE if rtype in UNDERSCORE_TYPES else _LDH
    out = []
    for i, raw in enumerate(labels):
        label = _idna_label(raw, "name")
        if label == "*" and i == 0:
            out.append(label)
            continue
        if len(label) > MAX_LABEL:
            raise _bad("name", f"must have labels of at most {MAX_LABEL} characters")
        if not pattern.match(label):
            allowed = "letters, digits, inner hyphens and _" if rtype in UNDERSCORE_TYPES else (
                "letters, digits and inner hyphens (_ only in TXT, SRV and CNAME names)")
            raise _bad("name", f"may hold only {allowed} in each label, and * only as the whole first label")
        out.append(label)
    if absolute:
        name = ".".join(out) + "."
        if not is_within(name, zone):
            raise _bad("name", f"must be inside the zone {zone} (or relative to it, with no trailing dot)")
    else:
        name = ".".join(out) + "." + zone
    if len(name) - 1 > MAX_NAME:
        raise _bad("name", f"must be at most {MAX_NAME} characters with the zone's name")
    return name


# --- record contents ---

def rrset(zone: str, name: str, rtype: str, ttl: int, records: list[str]) -> RRsetData:
    """Check and normalise a whole rrset (the PUT body's records) for owner `name` (absolute)."""
    if not MIN_TTL <= ttl <= MAX_TTL:
        raise _bad("ttl", f"must be between {MIN_TTL} and {MAX_TTL} seconds")
    if not records:
        raise _bad("records", "must have at least 1 item: DELETE removes a record set")
    if len(records) > MAX_RECORDS:
        raise _bad("records", f"must have at most {MAX_RECORDS} items")
    if rtype == "NS" and name == zone:
        raise errors.ManagedRRset("The apex NS record set names svc's nameservers and is managed by svc: use "
                                  "another name or type",
                                  details={"type": "NS", "name": "@"})
    if rtype == "CNAME":
        if name == zone:
            raise errors.CnameConflict("A CNAME cannot be at the zone apex (it holds the SOA and NS): use A and AAAA "
                                       "records there",
                                       details={"name": "@"})
        if len(records) != 1:
            raise _bad("records", "must hold exactly one record for a CNAME")
    origin = dns.name.from_text(zone)
    texts: list[str] = []
    size = 0
    for i, text in enumerate(records):
        field = f"records.{i}"
        content, wire = _record(origin, rtype, text, field)
        if content in texts:
            raise _bad(field, f"repeats records.{texts.index(content)}: each record appears once")
        if rtype == "CNAME" and content == name:
            raise _bad(field, "must not point the CNAME at its own name")
        texts.append(content)
        size += wire
    if size > MAX_RRSET_BYTES:
        raise _bad("records", f"must hold at most {MAX_RRSET_BYTES} bytes of record data together")
    return RRsetData(name=name, type=rtype, ttl=ttl, records=tuple(texts))


def _record(origin: dns.name.Name, rtype: str, text: str, field: str) -> tuple[str, int]:
    """(canonical text, wire size) of one record."""
    if len(text) > MAX_RECORD_CHARS:
        raise _bad(field, f"must be at most {MAX_RECORD_CHARS} characters")
    # A newline would end the record early and dnspython would drop the rest unsaid.
    if _CONTROL.search(text):
        raise _bad(field, "must not contain control characters (inside TXT quotes write \\DDD escapes)")
    if not text.strip():
        raise _bad(field, "must not be empty")
    if rtype == "TXT":
        rdata = _txt(text, field)
    else:
        try:
            rdata = dns.rdata.from_text(_IN, dns.rdatatype.from_text(rtype), text, origin=origin,
                                        relativize=False)
        except (dns.exception.DNSException, ValueError, UnicodeError) as exc:
            raise _bad(field, f"is not a valid {rtype} record: {_hint(rtype, exc)}") from None
        if rtype == "CAA":
            rdata = _caa(rdata, field)
        elif rtype in NAME_TYPES:
            _check_target(rdata, rtype, field)
    content = rdata.to_text()
    if rtype in NAME_TYPES:
        content = content.lower()
    return content, len(rdata.to_wire() or b"")


_SHAPES = {
    "A": "an IPv4 address such as 192.0.2.1",
    "AAAA": "an IPv6 address such as 2001:db8::1",
    "MX": "a preference and a host, such as 10 mail.example.com.",
    "SRV": "priority, weight, port and target, such as 10 60 5060 sip.example.com.",
    "CAA": 'flags, tag and value, such as 0 issue "letsencrypt.org"',
    "CNAME": "one host name, such as www.example.com.",
    "NS": "a nameserver's host name, such as ns1.example.net.",
}


def _hint(rtype: str, exc: Exception) -> str:
    """What is wrong with a record, in words: the shape it should have and, where the parser's
    complaint says which, what part is off (its own words are a parser's, not a person's)."""
    said = str(exc)
    shape = f"expected {_SHAPES.get(rtype, 'zone-file text')}"
    if said.startswith("expected EOL or EOF"):
        return f"it has more parts than a {rtype} record holds ({shape})"
    if said.startswith("expecting an identifier") or said.startswith("expecting a string") or "end of" in said:
        return f"a part is missing ({shape})"
    if said.startswith("expecting an integer"):
        return f"a part that must be a number is not ({shape})"
    if "is not an unsigned" in said or "out of range" in said:
        return f"a number is out of range ({shape})"
    return shape


def _check_target(rdata: dns.rdata.Rdata, rtype: str, field: str) -> None:
    """Targets are host names (with "_" allowed: DKIM and ACME CNAME targets hold it), not any
    bytes DNS could carry (\\032 and the like)."""
    target: dns.name.Name | None = getattr(rdata, "target", None) or getattr(rdata, "exchange", None)
    if target is None or target == dns.name.root:
        if rtype in ("CNAME", "NS") and target == dns.name.root:
            raise _bad(field, f"must name a host: a {rtype} to the root is not valid")
        return  # "0 ." is a null MX (RFC 7505), "0 0 0 ." a refused SRV service (RFC 2782)
    for raw in target.labels[:-1]:
        label = raw.decode("ascii", "replace").lower()
        if not _LDH_UNDERSCORE.match(label):
            raise _bad(field, "must name a host of letters, digits, hyphens and _ (one label per dot)")


def _caa(rdata: Any, field: str) -> dns.rdata.Rdata:
    tag = bytes(rdata.tag).decode("ascii", "replace").lower()  # tags are case-insensitive (RFC 8659)
    if tag not in CAA_TAGS:
        raise _bad(field, "must use the CAA tag issue, issuewild or iodef")
    value = bytes(rdata.value)
    try:
        text = value.decode("ascii")
    except UnicodeDecodeError:
        raise _bad(field, "must have a CAA value of ASCII text") from None
    if tag == "iodef":
        if not text.startswith(("mailto:", "https://", "http://")):
            raise _bad(field, "must have an iodef value that is a mailto:, https:// or http:// URL")
    else:
        domain = text.split(";", 1)[0].strip().lower()
        if domain and not _CAA_DOMAIN.match(domain):
            raise _bad(field, f"must have an {tag} value that is a CA's domain (or empty), then optional ; parameters")
    made: dns.rdata.Rdata = dns.rdtypes.ANY.CAA.CAA(  # type: ignore[no-untyped-call]
        _IN, dns.rdatatype.CAA, rdata.flags, tag.encode(), value)
    return made


def _txt(text: str, field: str) -> dns.rdata.Rdata:
    """A TXT record: quoted zone-file strings ('"v=spf1 -all"', '"a" "b"', with \\" and \\DDD
    escapes), or unquoted text taken as ONE string as written: tokenizing 'v=spf1 -all' would make
    two strings that SPF joins without the space. Strings over 255 bytes are split in 255-byte
    chunks (a DNS character-string holds at most 255)."""
    value = text.strip()
    strings: list[bytes] = []
    if value.startswith('"'):
        tok = dns.tokenizer.Tokenizer(value)
        try:
            while True:
                token = tok.get()
                if token.is_eol_or_eof():
                    break
                if not (token.is_quoted_string() or token.is_identifier()):
                    raise _bad(field, "is not valid TXT text: write quoted strings, or unquoted text")
                strings.append(token.unescape_to_bytes().value)
        except dns.exception.DNSException:
            raise _bad(field, "is not valid TXT text: a quote is not closed, or an escape is not "
                       '\\" or \\DDD') from None
    else:
        strings.append(value.encode("utf-8", "surrogatepass"))
    if sum(len(s) for s in strings) > MAX_TXT_BYTES:
        raise _bad(field, f"must hold at most {MAX_TXT_BYTES} bytes of text")
    chunks = [c for s in strings for c in ([s[i:i + 255] for i in range(0, len(s), 255)] or [b""])]
    return dns.rdtypes.ANY.TXT.TXT(_IN, dns.rdatatype.TXT, chunks)


# --- DS records (DNSSEC) ---

def ds_records(texts: list[str]) -> list[str]:
    """The DS records the owner registered at the parent, checked and in canonical text."""
    if len(texts) > MAX_DS:
        raise _bad("ds", f"must have at most {MAX_DS} items")
    out: list[str] = []
    for i, text in enumerate(texts):
        field = f"ds.{i}"
        if _CONTROL.search(text) or not text.strip() or len(text) > 1024:
            raise _bad(field, "must be one DS record on one line, such as 12345 13 2 ABCD...")
        try:
            rdata = dns.rdata.from_text(_IN, dns.rdatatype.DS, text)
        except (dns.exception.DNSException, ValueError) as exc:
            detail = str(exc).strip().rstrip(".") or type(exc).__name__
            raise _bad(field, "is not a valid DS record: expected key tag, algorithm, digest type and digest "
                       f"({detail})") from None
        content = rdata.to_text()
        if content in out:
            raise _bad(field, f"repeats ds.{out.index(content)}")
        out.append(content)
    return out
