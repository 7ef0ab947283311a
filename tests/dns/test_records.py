"""domains/dns/records.py: names and records as a person writes them -> what the store keeps."""

from __future__ import annotations

import pytest

from svc.domains.dns import errors, records

ZONE = "example.com."


def rr(rtype: str, *texts: str, name: str = "www", ttl: int = 300) -> tuple[str, ...]:
    owner = records.owner_name(ZONE, name, rtype)
    return records.rrset(ZONE, owner, rtype, ttl, list(texts)).records


def refused(fn: object, *args: object, field: str | None = None) -> errors.InvalidDns:
    with pytest.raises(errors.InvalidDns) as caught:
        fn(*args)  # type: ignore[operator]
    err = caught.value
    assert err.status == 400 and err.code == "bad_request"
    if field is not None:
        assert err.details and err.details["errors"][0]["field"] == field, err.details
        assert err.message.startswith(field)
    return err


@pytest.mark.parametrize(("text", "want"), [
    ("example.com", "example.com."), ("Example.COM.", "example.com."), ("  sub.example.org ", "sub.example.org."),
    ("bücher.example", "xn--bcher-kva.example."),
    ("\uff25\uff38\uff21\uff2d\uff30\uff2c\uff25.com", "example.com."),  # fullwidth letters (UTS-46 maps them)
    ("xn--bcher-kva.example", "xn--bcher-kva.example."),
])
def test_zone_names(text: str, want: str) -> None:
    assert records.zone_name(text) == want


@pytest.mark.parametrize("text", [
    "", ".", "com", "example..com", ".example.com", "*.example.com", "ex ample.com", "1.2.3.4", "a" * 64 + ".com",
    ".".join(["abcdefghi"] * 26) + ".com", "-bad.com", "bad-.com", "under_score.com", "exa\nmple.com", "ex!.com",
    # Not valid punycode: refused as custom hostnames refuse it (one rule, kit.hosts.idna_label).
    "xn--a.example", "www.xn--zz.example",
])
def test_zone_names_refused(text: str) -> None:
    refused(records.zone_name, text, field="name")


@pytest.mark.parametrize(("name", "rtype", "want"), [
    ("@", "A", "example.com."), ("www", "A", "www.example.com."), ("a.b", "AAAA", "a.b.example.com."),
    ("WWW", "A", "www.example.com."), ("*", "A", "*.example.com."), ("*.dev", "CNAME", "*.dev.example.com."),
    ("_svc-verify.www", "TXT", "_svc-verify.www.example.com."), ("_sip._tcp", "SRV", "_sip._tcp.example.com."),
    ("www.example.com.", "A", "www.example.com."), ("example.com.", "MX", "example.com."),
    ("münchen", "A", "xn--mnchen-3ya.example.com."),
])
def test_owner_names(name: str, rtype: str, want: str) -> None:
    assert records.owner_name(ZONE, name, rtype) == want


@pytest.mark.parametrize(("name", "rtype"), [
    ("", "A"), ("a..b", "A"), (".www", "A"), ("_svc", "A"), ("_mx", "MX"), ("w w", "A"), ("a*", "A"),
    ("www.*", "A"), ("www.other.org.", "A"), ("com.", "A"), ("x" * 64, "A"), ("-www", "A"), ("www-", "A"),
    (".".join(["a" * 60] * 4), "A"), ("tab\there", "TXT"),
])
def test_owner_names_refused(name: str, rtype: str) -> None:
    refused(records.owner_name, ZONE, name, rtype, field="name")


def test_types() -> None:
    for rtype in records.TYPES:
        assert records.record_type(rtype) == rtype
    refused(records.record_type, "a", field="type")
    refused(records.record_type, "TLSA", field="type")
    refused(records.record_type, "", field="type")
    with pytest.raises(errors.ManagedRRset):
        records.record_type("SOA")


def test_each_type_normalised() -> None:
    assert rr("A", "192.0.2.1", "192.0.2.2") == ("192.0.2.1", "192.0.2.2")
    assert rr("AAAA", "2001:DB8:0::1") == ("2001:db8::1",)
    assert rr("MX", "10 mail", "20 Mail.Other.ORG.", name="@") == ("10 mail.example.com.", "20 mail.other.org.")
    assert rr("MX", "0 .", name="@") == ("0 .",)
    assert rr("SRV", "10 60 5060 sip", name="_sip._tcp") == ("10 60 5060 sip.example.com.",)
    assert rr("CAA", "0 issue letsencrypt.org", "0 ISSUEWILD \";\"", "128 iodef mailto:sec@example.com", name="@") == (
        '0 issue "letsencrypt.org"', '0 issuewild ";"', '128 iodef "mailto:sec@example.com"')
    assert rr("CNAME", "target.example.net.", name="blog") == ("target.example.net.",)
    assert rr("CNAME", "www", name="blog") == ("www.example.com.",)
    assert rr("NS", "ns1.other.net.", "ns2", name="sub") == ("ns1.other.net.", "ns2.example.com.")
    assert rr("TXT", '"v=spf1 -all"', name="@") == ('"v=spf1 -all"',)


@pytest.mark.parametrize(("rtype", "text"), [
    ("A", "999.1.1.1"), ("A", "abc"), ("A", "010.1.1.1"), ("A", "1.2.3.4 5.6.7.8"), ("A", "1.2.3.4\n5.6.7.8"),
    ("A", "2001:db8::1"), ("AAAA", "1.2.3.4"), ("MX", "mail.example.com."), ("MX", "70000 mail."),
    ("SRV", "10 60 sip."), ("CAA", "0 bogus x"), ("CAA", "300 issue x"), ("CAA", "0 iodef nope"),
    ("CAA", '0 issue "not a domain!"'), ("NS", "."), ("MX", "10 m\\032x"), ("A", ""), ("A", "   "),
    ("TXT", '"unterminated'), ("TXT", '"a" ( "b"'), ("TXT", "x" * 4097), ("CNAME", "."),
])
def test_bad_records(rtype: str, text: str) -> None:
    refused(rr, rtype, text, field="records.0")


def test_txt_forms_and_chunking() -> None:
    assert rr("TXT", "v=spf1 include:x -all") == ('"v=spf1 include:x -all"',)  # unquoted: one string
    assert rr("TXT", '"a" "b"') == ('"a" "b"',)
    assert rr("TXT", 'say "hi"; ok') == ('"say \\"hi\\"; ok"',)
    assert rr("TXT", "héllo") == ('"h\\195\\169llo"',)
    assert rr("TXT", '""') == ('""',)
    long = "k=" + "x" * 598
    (content,) = rr("TXT", long)
    assert content == '"' + long[:255] + '" "' + long[255:510] + '" "' + long[510:] + '"'
    (quoted,) = rr("TXT", f'"{long}"')
    assert quoted == content
    refused(rr, "TXT", "\x01", field="records.0")


def test_rrset_rules() -> None:
    owner = records.owner_name(ZONE, "www", "A")
    refused(records.rrset, ZONE, owner, "A", 59, ["192.0.2.1"], field="ttl")
    refused(records.rrset, ZONE, owner, "A", 86401, ["192.0.2.1"], field="ttl")
    refused(records.rrset, ZONE, owner, "A", 300, [], field="records")
    refused(records.rrset, ZONE, owner, "A", 300, ["192.0.2.1"] * 101, field="records")
    refused(records.rrset, ZONE, owner, "A", 300, ["192.0.2.1", "192.0.2.1"], field="records.1")
    refused(records.rrset, ZONE, owner, "CNAME", 300, ["a.example.net.", "b.example.net."], field="records")
    refused(records.rrset, ZONE, owner, "CNAME", 300, ["www"], field="records.0")  # to itself
    refused(records.rrset, ZONE, owner, "TXT", 300, [f'"{i}' + "x" * 4000 + '"' for i in range(5)], field="records")
    with pytest.raises(errors.CnameConflict):
        records.rrset(ZONE, ZONE, "CNAME", 300, ["www.example.net."])
    with pytest.raises(errors.ManagedRRset):
        records.rrset(ZONE, ZONE, "NS", 300, ["ns1.example.net."])
    assert records.rrset(ZONE, owner, "A", 60, ["192.0.2.1"]).ttl == 60


def test_ds_records() -> None:
    digest = "2BB183AF5F22588179A53B0A98631FAD1A292118"
    assert records.ds_records([f"60485 5 1 {digest}"]) == [f"60485 5 1 {digest.lower()}"]
    assert records.ds_records([]) == []
    refused(records.ds_records, ["60485 5 2 abcd"], field="ds.0")
    refused(records.ds_records, ["junk"], field="ds.0")
    refused(records.ds_records, [f"60485 5 1 {digest}"] * 2, field="ds.1")


def test_relative() -> None:
    assert records.relative(ZONE, ZONE) == "@"
    assert records.relative("a.b.example.com.", ZONE) == "a.b"


@pytest.mark.parametrize(("rtype", "text", "said"), [
    ("MX", "10", "a part is missing"), ("MX", "10 mail 3 a", "more parts than a MX record holds"),
    ("SRV", "1 2 70000 x.", "a number is out of range"), ("MX", "x mail.", "must be a number"),
    ("A", "999.1.1.1", "expected an IPv4 address such as 192.0.2.1"),
])
def test_a_refused_record_is_said_in_words(rtype: str, text: str, said: str) -> None:
    """What is wrong, in words a person reads: never the parser's own ("Text input is malformed",
    "expected EOL or EOF, got 3")."""
    with pytest.raises(errors.InvalidDns) as caught:
        rr(rtype, text)
    message = caught.value.message
    assert said in message, message
    for internal in ("malformed", "EOL", "EOF", "expecting", "identifier", "unsigned 16-bit"):
        assert internal not in message, message
