"""The DNSimple registrar adapter (svc.adapters.registrar.dnsimple).

Part one checks each request the adapter sends (method, path, headers, body) against a scripted
transport. That transport answers with the bodies from DNSimple's documentation and recorded
fixtures, quoted verbatim from docs/notes/registrar-apis.md. The tests also check how those answers
map to the port's values and exceptions.

Part two covers the behaviours a registrar contract checks, run against the stateful double in
tests/support/dnsimple_double.py: quotes, an idempotent re-register, a declined card, a taken name,
delegation, lock, auto-renew, renewal once per key, a domain that left the account, outages, and a
pending registration."""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest

from svc.adapters.registrar import dnsimple as dnsimple_module
from svc.adapters.registrar import dnsimple_contact
from svc.adapters.registrar.dnsimple import AUTH_CODE_EMAILED, DnsimpleRegistrar
from svc.adapters.registrar.port import (
    Contact,
    NameUnavailable,
    NotInAccount,
    PaymentDeclined,
    Quote,
    RegistrarError,
    RegistrarRejected,
)
from tests.support.dnsimple_double import DnsimpleDouble

TOKEN = "dnsimple-secret-token-1234"
A = "/v2/1010"
R = f"{A}/registrar/domains"

# --- DNSimple's documented bodies, verbatim (docs/notes/registrar-apis.md) ---

CHECK = '{"data":{"domain":"ruby.codes","available":true,"premium":true}}'
PRICES = ('{"data":{"domain":"bingo.pizza","premium":true,"trustee_service":true,"registration_price":20.0,'
          '"renewal_price":20.0,"transfer_price":20.0,"restore_price":20.0,"trustee_service_price":20.0}}')
PINEAPPLE = '{"message":"TLD .PINEAPPLE is not supported"}'
CARD_DECLINED = ('{ "message": "We were unable to authorize the payment for this purchase on your card. Payment '
                 'gateway returned error code: card_declined (generic_decline).", "errors": {} }')
INVOICES = ('{"message": "This action cannot be completed because you have purchase invoices that need to be paid '
            'for: 12345-1010. Please retry the payment following these instructions '
            'https://support.dnsimple.com/articles/account-invoice-history/#retrying."}')
AUTH_FAILED = '{"message": "Authentication failed"}'
QUOTA = '{"message":"quota exceeded"}'
DOMAIN_NOT_FOUND = '{"message":"Domain `0` not found"}'
CONTACT_CREATED = ('{"data":{"id":595,"account_id":24,"label":null,"first_name":"foo","last_name":"foo",'
                   '"job_title":null,"organization_name":null,"email_address":"foo@example.com",'
                   '"phone":"+393392551831","fax":null,"address1":"foo","address2":null,"city":"foo",'
                   '"state_province":"RM","postal_code":"00171","country":"00171",'
                   '"created_at":"2016-01-19T20:50:26.066Z","updated_at":"2016-01-19T20:50:26.066Z"}}')
CONTACT_INVALID = ('{"message":"Validation failed","errors":{"address1":["can\'t be blank"],"city":["can\'t be '
                   'blank"],"country":["can\'t be blank"],"email":["can\'t be blank","is an invalid email '
                   'address"],"first_name":["can\'t be blank"],"last_name":["can\'t be blank"],"phone":["can\'t be '
                   'blank","is probably not a phone number"],"postal_code":["can\'t be blank"],"state_province":'
                   '["can\'t be blank"]}}')
REGISTERED = ('{"data":{"id":1,"domain_id":999,"registrant_id":2,"period":1,"state":"new","auto_renew":false,'
              '"whois_privacy":false,"created_at":"2016-12-09T19:35:31Z","updated_at":"2016-12-09T19:35:31Z"}}')
REGISTERING = ('{"data":{"id":361,"domain_id":104040,"registrant_id":2715,"period":1,"state":"registering",'
               '"auto_renew":false,"whois_privacy":false,"created_at":"2023-01-27T17:44:32Z",'
               '"updated_at":"2023-01-27T17:44:40Z"}}')
EXTENDED_ATTRIBUTES = ('{"message":"Invalid extended attributes","errors":{"x-accept-ssl-requirement": "it\'s '
                       'required", "x-id-number": "invalid number"}}')
DELEGATION = '{"data":["ns1.dnsimple.com","ns2.dnsimple.com","ns3.dnsimple.com","ns4.dnsimple.com"]}'
DOMAIN = ('{"data":{"id":181984,"account_id":1385,"registrant_id":2715,"name":"example-alpha.com",'
          '"unicode_name":"example-alpha.com","state":"registered","auto_renew":false,"private_whois":false,'
          '"expires_on":"2021-06-05","expires_at":"2021-06-05T02:15:00Z","created_at":"2020-06-04T19:15:14Z",'
          '"updated_at":"2020-06-04T19:15:21Z"}}')
# The second domain of the listDomains fixture: a hosted zone, not a registration.
HOSTED = ('{"data":{"id":181985,"account_id":1385,"registrant_id":null,"name":"example-beta.com",'
          '"unicode_name":"example-beta.com","state":"hosted","auto_renew":false,"private_whois":false,'
          '"expires_on":null,"expires_at":null,"created_at":"2020-06-04T19:47:05Z",'
          '"updated_at":"2020-06-04T19:47:05Z"}}')
LOCK_ON = '{"data":{"enabled":true}}'
LOCK_OFF = '{"data":{"enabled":false}}'
RENEWAL = ('{"data":{"id":1,"domain_id":999,"period":1,"state":"new","created_at":"2016-12-09T19:46:45Z",'
           '"updated_at":"2016-12-09T19:46:45Z"}}')
TOO_EARLY = '{"message":"example.com may not be renewed at this time","errors":{}}'

ALPHA = "example-alpha.com"
EXPIRES = datetime(2021, 6, 5, 2, 15, tzinfo=UTC)
NS = ("ns1.dnsimple.com", "ns2.dnsimple.com", "ns3.dnsimple.com", "ns4.dnsimple.com")
ADA = Contact(name="Ada King Lovelace", email="ada@example.com", phone="+1 (401) 234-5678", street="12 St James's Sq",
              city="London", postal_code="SW1Y 4JH", country="gb")


def later(body: str, expires_on: str) -> str:
    """The getDomain fixture with another expiry (after a renewal)."""
    data = json.loads(body)
    data["data"].update(expires_on=expires_on, expires_at=f"{expires_on}T02:15:00Z")
    return json.dumps(data)


Step = tuple[str, str, Any]


class Script:
    """A transport that expects the given requests in order and answers each with (status, body),
    a callable of the request, or an exception to raise."""

    def __init__(self, *steps: Step) -> None:
        self.steps = list(steps)
        self.seen: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        assert self.steps, f"unexpected {request.method} {request.url.path}"
        method, path, answer = self.steps.pop(0)
        assert (request.method, request.url.path) == (method, path)
        self.seen.append(request)
        if callable(answer):
            answer = answer(request)
        if isinstance(answer, BaseException):
            raise answer
        status, body, *headers = answer
        extra = headers[0] if headers else {}
        if body is None:
            return httpx.Response(status, headers=extra)
        return httpx.Response(status, content=body.encode(), headers={"Content-Type": "application/json", **extra})

    def body(self, index: int) -> Any:
        return json.loads(self.seen[index].content)


@contextlib.asynccontextmanager
async def scripted(*steps: Step, **options: Any) -> AsyncIterator[tuple[DnsimpleRegistrar, Script]]:
    script = Script(*steps)
    registrar = DnsimpleRegistrar(token=TOKEN, account_id="1010", transport=httpx.MockTransport(script),
                                  poll_delay_seconds=0, **options)
    try:
        yield registrar, script
    finally:
        await registrar.aclose()
    assert not script.steps, f"requests never sent: {script.steps}"


def label_of(charge_id: str) -> str:
    return "svc-" + hashlib.sha256(charge_id.encode()).hexdigest()[:20]


def registrant(label: str) -> Callable[[httpx.Request], tuple[int, str]]:
    return lambda _: (200, json.dumps({"data": {"id": 2715, "label": label, "first_name": "Ada"}}))


# --- part one: the documented requests and answers ---


async def test_check_sends_the_documented_requests_and_reads_dollars_as_cents() -> None:
    async with scripted(("GET", f"{R}/ruby.codes/check", (200, CHECK)),
                        ("GET", f"{R}/ruby.codes/prices", (200, PRICES))) as (registrar, script):
        assert await registrar.check(["Ruby.Codes."]) == [Quote("ruby.codes", True, 2000, 2000)]
    for request in script.seen:
        assert request.url.scheme == "https" and request.url.host == "api.dnsimple.com"
        assert request.headers["authorization"] == f"Bearer {TOKEN}"
        assert request.headers["accept"] == "application/json"
        assert request.content == b""


async def test_prices_round_half_up_to_cents_without_float_math() -> None:
    prices = '{"data":{"domain":"a.com","premium":false,"registration_price":12.345,"renewal_price":0.005}}'
    async with scripted(("GET", f"{R}/a.com/check", (200, CHECK)), ("GET", f"{R}/a.com/prices", (200, prices)),
                        ("GET", f"{R}/b.com/check", (200, CHECK)),
                        ("GET", f"{R}/b.com/prices", (200, prices.replace("12.345", "10.994999")))) as (r, _):
        assert await r.check(["a.com", "b.com"]) == [Quote("a.com", True, 1235, 1), Quote("b.com", True, 1099, 1)]


async def test_sandbox_and_another_base_url() -> None:
    for options, url in (({"sandbox": True}, "https://api.sandbox.dnsimple.com"),
                         ({"base_url": "http://dnsimple.test:8080/"}, "http://dnsimple.test:8080")):
        async with scripted(("GET", f"{A}/domains/{ALPHA}", (404, DOMAIN_NOT_FOUND)), **options) as (registrar, script):
            with pytest.raises(NotInAccount):
                await registrar.domain(ALPHA)
        assert str(script.seen[0].url).startswith(f"{url}/v2/1010/")


async def test_names_not_for_sale_have_no_prices() -> None:
    taken = CHECK.replace('"available":true', '"available":false')
    async with scripted(("GET", f"{R}/example.pineapple/check", (400, PINEAPPLE)),
                        ("GET", f"{R}/ruby.codes/check", (200, taken))) as (registrar, _):
        quotes = await registrar.check(["example.pineapple", "ruby.codes", "not a name"])
    assert quotes == [Quote("example.pineapple", False, None, None), Quote("ruby.codes", False, None, None),
                      Quote("not a name", False, None, None)]


async def test_charge_rereads_the_price_and_takes_nothing() -> None:
    prices = ("GET", f"{R}/ruby.codes/prices", (200, PRICES))
    async with scripted(prices, prices, prices) as (registrar, _):
        charge = await registrar.charge(name="ruby.codes", years=1, amount_cents=2000, key="dom-1:1")
        assert charge.startswith("quote:ruby.codes:1:2000:premium:")
        assert await registrar.charge(name="ruby.codes", years=1, amount_cents=2000, key="dom-1:1") == charge
        with pytest.raises(RegistrarRejected, match="the price changed") as changed:
            await registrar.charge(name="ruby.codes", years=1, amount_cents=1800, key="dom-1:2")
        assert changed.value.field == "amountCents"
        with pytest.raises(RegistrarRejected, match="one year") as term:  # refused before any request
            await registrar.charge(name="ruby.codes", years=2, amount_cents=4000, key="dom-1:3")
        assert term.value.field == "years"
        await registrar.refund(charge)  # nothing was taken: no request
        await registrar.refund(charge)
        with pytest.raises(RegistrarRejected) as refunded:  # a refunded quote registers nothing
            await registrar.register(name="ruby.codes", years=1, contact=ADA, charge_id=charge)
        assert refunded.value.field == "chargeId"
        with pytest.raises(RegistrarRejected):
            await registrar.refund("ch_from_elsewhere")


CHARGE = f"quote:{ALPHA}:1:1400:standard:0123456789abcdef"


async def test_register_creates_the_registrant_then_the_registration() -> None:
    async with scripted(("GET", f"{A}/domains/{ALPHA}", (404, DOMAIN_NOT_FOUND)),
                        ("POST", f"{A}/contacts", (201, CONTACT_CREATED)),
                        ("POST", f"{R}/{ALPHA}/registrations", (201, REGISTERED)),
                        ("GET", f"{A}/domains/{ALPHA}", (200, DOMAIN)),
                        ("GET", f"{R}/{ALPHA}/transfer_lock", (200, LOCK_ON)),
                        ("GET", f"{R}/{ALPHA}/delegation", (200, DELEGATION))) as (registrar, script):
        made = await registrar.register(name=ALPHA, years=1, contact=ADA, charge_id=CHARGE)
    assert (made.name, made.expires_at, made.locked, made.auto_renew, made.nameservers) == (
        ALPHA, EXPIRES, True, False, NS)
    assert script.body(1) == {
        "label": label_of(CHARGE), "first_name": "Ada King", "last_name": "Lovelace",
        "address1": "12 St James's Sq", "city": "London", "state_province": "London", "postal_code": "SW1Y 4JH",
        "country": "GB", "email": "ada@example.com", "phone": "+1.4012345678"}
    assert script.body(2) == {"registrant_id": 595, "auto_renew": True, "whois_privacy": False}
    assert script.seen[2].headers["content-type"] == "application/json"


async def test_register_confirms_a_premium_price() -> None:
    charge = "quote:ruby.codes:1:10900:premium:0123456789abcdef"
    domain = DOMAIN.replace(ALPHA, "ruby.codes")
    async with scripted(("GET", f"{A}/domains/ruby.codes", (404, DOMAIN_NOT_FOUND)),
                        ("POST", f"{A}/contacts", (201, CONTACT_CREATED)),
                        ("POST", f"{R}/ruby.codes/registrations", (201, REGISTERED)),
                        ("GET", f"{A}/domains/ruby.codes", (200, domain)),
                        ("GET", f"{R}/ruby.codes/transfer_lock", (200, LOCK_ON)),
                        ("GET", f"{R}/ruby.codes/delegation", (200, DELEGATION))) as (registrar, script):
        await registrar.register(name="ruby.codes", years=1, contact=ADA, charge_id=charge)
    assert script.body(2)["premium_price"] == "109.00"


async def test_a_pending_registration_is_polled_then_left_for_a_retry() -> None:
    async with scripted(("GET", f"{A}/domains/{ALPHA}", (404, DOMAIN_NOT_FOUND)),
                        ("POST", f"{A}/contacts", (201, CONTACT_CREATED)),
                        ("POST", f"{R}/{ALPHA}/registrations", (202, REGISTERED)),
                        ("GET", f"{R}/{ALPHA}/registrations/1", (200, REGISTERING)),
                        ("GET", f"{R}/{ALPHA}/registrations/1", (200, REGISTERING)),
                        # The saga's retry: still pending, and never registered a second time.
                        ("GET", f"{A}/domains/{ALPHA}", (200, HOSTED.replace("example-beta.com", ALPHA))),
                        ("GET", f"{R}/{ALPHA}/registrations/1", (200, REGISTERING)),
                        poll_attempts=2) as (registrar, _):
        for _ in range(2):
            with pytest.raises(RegistrarError, match="still pending; retry"):
                await registrar.register(name=ALPHA, years=1, contact=ADA, charge_id=CHARGE)


@pytest.mark.parametrize(("status", "body"), [(400, CARD_DECLINED), (402, INVOICES)])
async def test_a_declined_payment_shows_at_registration(status: int, body: str) -> None:
    async with scripted(("GET", f"{A}/domains/{ALPHA}", (404, DOMAIN_NOT_FOUND)),
                        ("POST", f"{A}/contacts", (201, CONTACT_CREATED)),
                        ("POST", f"{R}/{ALPHA}/registrations", (status, body))) as (registrar, _):
        with pytest.raises(PaymentDeclined, match="card_declined" if status == 400 else "invoices"):
            await registrar.register(name=ALPHA, years=1, contact=ADA, charge_id=CHARGE)


async def test_field_errors_name_the_ports_field() -> None:
    async with scripted(("GET", f"{A}/domains/{ALPHA}", (404, DOMAIN_NOT_FOUND)),
                        ("POST", f"{A}/contacts", (400, CONTACT_INVALID))) as (registrar, _):
        with pytest.raises(RegistrarRejected, match="phone: can't be blank, is probably not a phone") as bad:
            await registrar.register(name=ALPHA, years=1, contact=ADA, charge_id=CHARGE)
    assert bad.value.field == "contact.street"  # address1, the first field DNSimple names
    async with scripted(("GET", f"{A}/domains/{ALPHA}", (404, DOMAIN_NOT_FOUND)),
                        ("POST", f"{A}/contacts", (201, CONTACT_CREATED)),
                        ("POST", f"{R}/{ALPHA}/registrations", (400, EXTENDED_ATTRIBUTES))) as (registrar, _):
        with pytest.raises(RegistrarRejected, match="x-id-number: invalid number") as bad:
            await registrar.register(name=ALPHA, years=1, contact=ADA, charge_id=CHARGE)
    assert bad.value.field is None


async def test_registering_again_answers_the_registration_it_made() -> None:
    label = label_of(CHARGE)
    # The registration went through but its answer was lost: the resend finds it, with this charge's registrant.
    refused = '{"message":"The domain is not available for registration","errors":{}}'  # words not documented
    async with scripted(("GET", f"{A}/domains/{ALPHA}", (404, DOMAIN_NOT_FOUND)),
                        ("POST", f"{A}/contacts", (201, CONTACT_CREATED)),
                        ("POST", f"{R}/{ALPHA}/registrations", (400, refused)),
                        ("GET", f"{A}/domains/{ALPHA}", (200, DOMAIN)),
                        ("GET", f"{A}/contacts/2715", registrant(label)),
                        ("GET", f"{R}/{ALPHA}/transfer_lock", (200, LOCK_ON)),
                        ("GET", f"{R}/{ALPHA}/delegation", (200, DELEGATION)),
                        # Sent again later: read, never registered twice.
                        ("GET", f"{A}/domains/{ALPHA}", (200, DOMAIN)),
                        ("GET", f"{A}/contacts/2715", registrant(label)),
                        ("GET", f"{R}/{ALPHA}/transfer_lock", (200, LOCK_ON)),
                        ("GET", f"{R}/{ALPHA}/delegation", (200, DELEGATION))) as (registrar, _):
        first = await registrar.register(name=ALPHA, years=1, contact=ADA, charge_id=CHARGE)
        assert await registrar.register(name=ALPHA, years=1, contact=ADA, charge_id=CHARGE) == first


async def test_a_name_held_for_another_registrant_or_taken_is_unavailable() -> None:
    async with scripted(("GET", f"{A}/domains/{ALPHA}", (200, DOMAIN)),
                        ("GET", f"{A}/contacts/2715", registrant("svc-another-charge"))) as (registrar, _):
        with pytest.raises(NameUnavailable, match="another registrant"):
            await registrar.register(name=ALPHA, years=1, contact=ADA, charge_id=CHARGE)
    refused = '{"message":"The domain is not available for registration","errors":{}}'  # words not documented
    async with scripted(("GET", f"{A}/domains/{ALPHA}", (404, DOMAIN_NOT_FOUND)),
                        ("POST", f"{A}/contacts", (201, CONTACT_CREATED)),
                        ("POST", f"{R}/{ALPHA}/registrations", (400, refused)),
                        ("GET", f"{A}/domains/{ALPHA}", (404, DOMAIN_NOT_FOUND)),
                        ("GET", f"{R}/{ALPHA}/check", (200, CHECK.replace("true,", "false,", 1)))) as (registrar, _):
        with pytest.raises(NameUnavailable, match="not available"):
            await registrar.register(name=ALPHA, years=1, contact=ADA, charge_id=CHARGE)
    with pytest.raises(RegistrarRejected) as other:
        async with scripted() as (registrar, _):
            await registrar.register(name="other.com", years=1, contact=ADA, charge_id=CHARGE)
    assert other.value.field == "chargeId"


async def test_set_nameservers_puts_a_bare_array() -> None:
    async with scripted(("PUT", f"{R}/{ALPHA}/delegation", (200, DELEGATION)),
                        ("GET", f"{A}/domains/{ALPHA}", (200, DOMAIN)),
                        ("GET", f"{R}/{ALPHA}/transfer_lock", (200, LOCK_OFF))) as (registrar, script):
        made = await registrar.set_nameservers(ALPHA, ["NS1.dnsimple.com.", "ns2.dnsimple.com", "ns3.dnsimple.com",
                                                       "ns4.dnsimple.com"])
    assert script.body(0) == list(NS)
    assert (made.nameservers, made.locked) == (NS, False)


async def test_a_domain_not_in_the_account() -> None:
    async with scripted(("GET", f"{A}/domains/{ALPHA}", (404, DOMAIN_NOT_FOUND)),
                        ("GET", f"{A}/domains/example-beta.com", (200, HOSTED)),
                        ("PUT", f"{R}/{ALPHA}/delegation", (404, DOMAIN_NOT_FOUND)),
                        ("GET", f"{R}/{ALPHA}/transfer_lock", (404, DOMAIN_NOT_FOUND))) as (registrar, _):
        with pytest.raises(NotInAccount):
            await registrar.domain(ALPHA)
        with pytest.raises(NotInAccount, match="zone only"):
            await registrar.domain("example-beta.com")
        with pytest.raises(NotInAccount):
            await registrar.set_nameservers(ALPHA, ["ns1.example.net"])
        with pytest.raises(NotInAccount):
            await registrar.set_lock(ALPHA, True)


async def test_lock_and_unlock() -> None:
    async with scripted(("GET", f"{R}/{ALPHA}/transfer_lock", (200, LOCK_OFF)),
                        ("POST", f"{R}/{ALPHA}/transfer_lock", (201, LOCK_ON)),
                        ("GET", f"{A}/domains/{ALPHA}", (200, DOMAIN)),
                        ("GET", f"{R}/{ALPHA}/delegation", (200, DELEGATION)),
                        ("GET", f"{R}/{ALPHA}/transfer_lock", (200, LOCK_ON)),
                        ("DELETE", f"{R}/{ALPHA}/transfer_lock", (200, LOCK_OFF)),
                        ("GET", f"{A}/domains/{ALPHA}", (200, DOMAIN)),
                        ("GET", f"{R}/{ALPHA}/delegation", (200, DELEGATION)),
                        # Already unlocked: nothing sent.
                        ("GET", f"{R}/{ALPHA}/transfer_lock", (200, LOCK_OFF)),
                        ("GET", f"{A}/domains/{ALPHA}", (200, DOMAIN)),
                        ("GET", f"{R}/{ALPHA}/delegation", (200, DELEGATION))) as (registrar, script):
        assert (await registrar.set_lock(ALPHA, True)).locked is True
        assert (await registrar.set_lock(ALPHA, False)).locked is False
        assert (await registrar.set_lock(ALPHA, False)).locked is False
    assert script.seen[1].content == b""


AUTO_RENEWING = DOMAIN.replace('"auto_renew":false', '"auto_renew":true')


async def test_auto_renew_on_and_off() -> None:
    async with scripted(("GET", f"{A}/domains/{ALPHA}", (200, DOMAIN)),
                        ("PUT", f"{R}/{ALPHA}/auto_renewal", (204, None)),
                        ("GET", f"{R}/{ALPHA}/transfer_lock", (200, LOCK_ON)),
                        ("GET", f"{R}/{ALPHA}/delegation", (200, DELEGATION)),
                        ("GET", f"{A}/domains/{ALPHA}", (200, AUTO_RENEWING)),
                        ("DELETE", f"{R}/{ALPHA}/auto_renewal", (204, None)),
                        ("GET", f"{R}/{ALPHA}/transfer_lock", (200, LOCK_ON)),
                        ("GET", f"{R}/{ALPHA}/delegation", (200, DELEGATION))) as (registrar, _):
        assert (await registrar.set_auto_renew(ALPHA, True)).auto_renew is True
        assert (await registrar.set_auto_renew(ALPHA, False)).auto_renew is False


async def test_renew_posts_the_period_and_reads_the_new_expiry() -> None:
    async with scripted(("GET", f"{A}/domains/{ALPHA}", (200, DOMAIN)),
                        ("POST", f"{R}/{ALPHA}/renewals", (201, RENEWAL)),
                        ("GET", f"{A}/domains/{ALPHA}", (200, later(DOMAIN, "2023-06-05"))),
                        ("GET", f"{R}/{ALPHA}/transfer_lock", (200, LOCK_ON)),
                        ("GET", f"{R}/{ALPHA}/delegation", (200, DELEGATION))) as (registrar, script):
        made = await registrar.renew(ALPHA, years=2, key="dom-1:renew:1")
    assert script.body(1) == {"period": 2}
    assert made.expires_at == datetime(2023, 6, 5, 2, 15, tzinfo=UTC)


async def test_renew_too_early_declined_or_missing() -> None:
    async with scripted(("GET", f"{A}/domains/{ALPHA}", (200, DOMAIN)),
                        ("POST", f"{R}/{ALPHA}/renewals", (400, TOO_EARLY)),
                        ("GET", f"{A}/domains/{ALPHA}", (200, DOMAIN)),
                        ("POST", f"{R}/{ALPHA}/renewals", (402, INVOICES)),
                        ("GET", f"{A}/domains/{ALPHA}", (404, DOMAIN_NOT_FOUND))) as (registrar, _):
        with pytest.raises(RegistrarRejected, match="may not be renewed at this time"):
            await registrar.renew(ALPHA, years=1, key="k1")
        with pytest.raises(PaymentDeclined):
            await registrar.renew(ALPHA, years=1, key="k2")
        with pytest.raises(NotInAccount):
            await registrar.renew(ALPHA, years=1, key="k3")


async def test_a_renewal_is_not_sent_twice_for_one_key() -> None:
    moved = later(DOMAIN, "2022-06-05")
    async with scripted(
            # The key names the expiry it renews from (2021-06-05); the domain already expires later.
            ("GET", f"{A}/domains/{ALPHA}", (200, moved)),
            ("GET", f"{R}/{ALPHA}/transfer_lock", (200, LOCK_ON)),
            ("GET", f"{R}/{ALPHA}/delegation", (200, DELEGATION)),
            # A key without a date: the answer is lost, the resend sees the expiry moved.
            ("GET", f"{A}/domains/{ALPHA}", (200, DOMAIN)),
            ("POST", f"{R}/{ALPHA}/renewals", httpx.ReadTimeout("lost")),
            ("GET", f"{A}/domains/{ALPHA}", (200, moved)),
            ("GET", f"{R}/{ALPHA}/transfer_lock", (200, LOCK_ON)),
            ("GET", f"{R}/{ALPHA}/delegation", (200, DELEGATION))) as (registrar, _):
        made = await registrar.renew(ALPHA, years=1, key="dom-1:renew:2021-06-05:1")  # svc's form
        assert made.expires_at.year == 2022
        with pytest.raises(RegistrarError, match="in time"):
            await registrar.renew(ALPHA, years=1, key="dom-1:renew:7")
        assert (await registrar.renew(ALPHA, years=1, key="dom-1:renew:7")).expires_at.year == 2022


async def test_the_auth_code_is_emailed_not_returned() -> None:
    transfer_out = f"{R}/{ALPHA}/authorize_transfer_out"
    async with scripted(("POST", transfer_out, (204, None)),
                        ("POST", transfer_out, (404, DOMAIN_NOT_FOUND))) as (registrar, script):
        assert await registrar.auth_code(ALPHA) == AUTH_CODE_EMAILED
        with pytest.raises(NotInAccount):
            await registrar.auth_code(ALPHA)
    assert script.seen[0].content == b""


@pytest.mark.parametrize(("answer", "words"), [
    ((429, QUOTA, {"X-RateLimit-Reset": "1700000000", "X-RateLimit-Remaining": "0"}),
     r"rate limit.*2023-11-14T22:13:20\+00:00 \(X-RateLimit-Reset\)"),
    ((401, AUTH_FAILED), "refused the API token"),
    ((403, '{"message": "Permission Denied. Required Scope: registrar:example.com:write"}'), "Permission Denied"),
    ((500, '{"message":"Internal Server Error"}'), "HTTP 500"),
    ((502, "<html>Bad Gateway</html>"), "HTTP 502"),
    ((200, "<html>not an API</html>"), "not JSON"),
    ((200, '{"data":[1, 2]}'), "not its API"),
    ((200, '{"domain": "example-alpha.com"}'), "not its API"),
    ((200, DOMAIN.replace('"expires_on":"2021-06-05","expires_at":"2021-06-05T02:15:00Z"',
                          '"expires_on":null,"expires_at":"soon"')), "not its API"),
    (httpx.ReadTimeout("slow"), "did not answer in time"),
    (httpx.ConnectError("refused"), "could not reach DNSimple"),
])
async def test_outages_and_garbage_are_registrar_errors(answer: Any, words: str) -> None:
    steps: list[Step] = [("GET", f"{A}/domains/{ALPHA}", answer)]
    if isinstance(answer, tuple) and answer[0] == 200 and answer[1].startswith('{"data":{"id"'):
        steps += [("GET", f"{R}/{ALPHA}/transfer_lock", (200, LOCK_ON)), ("GET", f"{R}/{ALPHA}/delegation",
                                                                             (200, DELEGATION))]
    async with scripted(*steps) as (registrar, _):
        with pytest.raises(RegistrarError, match=words) as failed:
            await registrar.domain(ALPHA)
    assert TOKEN not in str(failed.value)


def test_contact_values_in_dnsimple_terms() -> None:
    phone = dnsimple_contact.phone
    assert phone("+14012345678") == "+1.4012345678"
    assert phone("+44 20 7946 0958") == "+44.2079460958"
    assert phone("+353 1 234 5678") == "+353.12345678"
    assert phone("0049 30 1234567") == "+49.301234567"
    assert phone("+7 495 123-45-67") == "+7.4951234567"
    assert phone("+1.4012345678") == "+1.4012345678"
    assert phone("401 234 5678") == "401 234 5678"  # no country code: DNSimple judges it
    assert dnsimple_contact._split_name("  Ada   Lovelace ") == ("Ada", "Lovelace")
    assert dnsimple_contact._split_name("Ada") == ("Ada", "Ada")
    assert dnsimple_module._cents(Decimal("0.125"), "p") == 13
    assert dnsimple_module._cents(20, "p") == 2000
    key_date = dnsimple_module._key_date
    assert key_date("d1:renew:2027-06-05:2") == key_date("d1:renew:2027-06-05") == datetime(2027, 6, 5).date()
    assert key_date("d1:renew:unknown:2") is None and key_date("d1:2027-13-45") is None


# --- part two: the stateful double ---


@contextlib.asynccontextmanager
async def doubled(double: DnsimpleDouble, *, asgi: bool = False,
                  poll_attempts: int = 3) -> AsyncIterator[DnsimpleRegistrar]:
    transport = httpx.ASGITransport(app=double.app) if asgi else double.transport()
    registrar = DnsimpleRegistrar(token=double.token, account_id=double.account_id, base_url="http://dnsimple.test",
                                  transport=transport, poll_attempts=poll_attempts, poll_delay_seconds=0)
    try:
        yield registrar
    finally:
        await registrar.aclose()


async def buy(registrar: DnsimpleRegistrar, name: str, key: str = "d:1") -> Any:
    [quote] = await registrar.check([name])
    assert quote.available and quote.price_cents is not None
    charge = await registrar.charge(name=name, years=1, amount_cents=quote.price_cents, key=key)
    return charge, await registrar.register(name=name, years=1, contact=ADA, charge_id=charge)


async def test_double_journey() -> None:
    double = DnsimpleDouble()
    async with doubled(double) as registrar:
        assert await registrar.check(["shop.com", "shop.pineapple"]) == [
            Quote("shop.com", True, 1400, 1400), Quote("shop.pineapple", False, None, None)]
        charge, made = await buy(registrar, "shop.com")
        assert (made.locked, made.auto_renew, made.nameservers[0]) == (True, True, "ns1.dnsimple.com")
        assert made.expires_at > datetime.now(UTC) + timedelta(days=360)
        # Registering again with the same charge answers the same registration, charged once.
        assert await registrar.register(name="shop.com", years=1, contact=ADA, charge_id=charge) == made
        assert len(double.charges) == 1 and len(double.registrations) == 1
        assert (await registrar.check(["shop.com"]))[0].available is False
        assert double.contacts[double.registrations[0]["registrant_id"]]["phone"] == "+1.4012345678"

        assert (await registrar.set_nameservers("shop.com", ["ns1.svc.test", "ns2.svc.test"])).nameservers == (
            "ns1.svc.test", "ns2.svc.test")
        assert (await registrar.set_lock("shop.com", False)).locked is False
        assert (await registrar.set_auto_renew("shop.com", False)).auto_renew is False
        assert await registrar.domain("shop.com") == made.__class__(
            name="shop.com", expires_at=made.expires_at, locked=False, auto_renew=False,
            nameservers=("ns1.svc.test", "ns2.svc.test"))

        renewed = await registrar.renew("shop.com", years=2, key="d:renew:1")
        assert (renewed.expires_at - made.expires_at).days == 730
        assert await registrar.renew("shop.com", years=2, key="d:renew:1") == renewed  # once per key
        assert [c["product_type"] for c in double.charges] == ["domain-registration", "domain-renewal"]
        assert double.charges[1]["amount"] == Decimal("28.00")

        assert await registrar.auth_code("shop.com") == AUTH_CODE_EMAILED
        assert double.auth_emails == ["shop.com"] and (await registrar.domain("shop.com")).locked is False

        double.expire("shop.com", datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC))
        assert (await registrar.domain("shop.com")).expires_at == datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
        double.transfer_away("shop.com")
        with pytest.raises(NotInAccount):
            await registrar.domain("shop.com")
        with pytest.raises(NotInAccount):
            await registrar.renew("shop.com", years=1, key="d:renew:2")


async def test_double_refusals() -> None:
    double = DnsimpleDouble()
    async with doubled(double) as registrar:
        double.take("held.com")
        assert (await registrar.check(["held.com"]))[0].available is False
        charge = await registrar.charge(name="held.com", years=1, amount_cents=1400, key="h:1")
        with pytest.raises(NameUnavailable):
            await registrar.register(name="held.com", years=1, contact=ADA, charge_id=charge)

        double.decline_next()
        with pytest.raises(PaymentDeclined, match="card_declined"):
            await buy(registrar, "card.com")
        assert double.charges == [] and "card.com" not in double.domains
        _, made = await buy(registrar, "card.com")  # the same charge, once the card works
        assert made.name == "card.com" and len(double.charges) == 1

        # Another org's charge for a name the account already holds.
        other = await registrar.charge(name="card.com", years=1, amount_cents=1400, key="other:1")
        with pytest.raises(NameUnavailable, match="another registrant"):
            await registrar.register(name="card.com", years=1, contact=ADA, charge_id=other)

        double.set_price("com", "15.00")
        with pytest.raises(RegistrarRejected, match="price changed"):
            await registrar.charge(name="new.com", years=1, amount_cents=1400, key="n:1")
        bad = Contact(name="Ada", email="ada", phone="12", street="", city="x", postal_code="1", country="GB")
        charge = await registrar.charge(name="new.com", years=1, amount_cents=1500, key="n:2")
        with pytest.raises(RegistrarRejected) as refused:
            await registrar.register(name="new.com", years=1, contact=bad, charge_id=charge)
        assert refused.value.field == "contact.street"

        for status, words in ((503, "HTTP 503"), (429, "rate limit"), (401, "API token")):
            double.fail_next(status)
            with pytest.raises(RegistrarError, match=words):
                await registrar.domain("card.com")
        double.fail_next(200, body="<html>maintenance</html>")
        with pytest.raises(RegistrarError, match="not JSON"):
            await registrar.domain("card.com")
        assert (await registrar.domain("card.com")).name == "card.com"

        double.make_premium("gold.com", "109.00")
        _, gold = await buy(registrar, "gold.com", key="g:1")
        assert gold.name == "gold.com" and double.charges[-1]["amount"] == Decimal("109.00")


async def test_double_pending_registration_completes_on_a_retry() -> None:
    double = DnsimpleDouble()
    async with doubled(double, poll_attempts=1) as registrar:
        double.pend_next(polls=6)
        quote = (await registrar.check(["slow.dev"]))[0]
        charge = await registrar.charge(name="slow.dev", years=1, amount_cents=quote.price_cents or 0, key="s:1")
        with pytest.raises(RegistrarError, match="still pending; retry"):
            await registrar.register(name="slow.dev", years=1, contact=ADA, charge_id=charge)
        assert double.charges == []
        made = None
        for _ in range(5):  # the saga resumes later
            try:
                made = await registrar.register(name="slow.dev", years=1, contact=ADA, charge_id=charge)
                break
            except RegistrarError as exc:
                assert "pending" in str(exc)
        assert made is not None and made.name == "slow.dev"
        assert len(double.registrations) == 1 and len(double.charges) == 1 and len(double.contacts) == 1
    # A pending renewal, then the same key again: renewed once.
    async with doubled(double, poll_attempts=1) as registrar:
        double.pend_next(polls=4)
        with pytest.raises(RegistrarError, match="still pending; retry"):
            await registrar.renew("slow.dev", years=1, key="s:renew:1")
        renewed = None
        for _ in range(5):
            try:
                renewed = await registrar.renew("slow.dev", years=1, key="s:renew:1")
                break
            except RegistrarError:
                pass
        assert renewed is not None and renewed.expires_at > made.expires_at
        assert len(double.renewals) == 1 and len(double.charges) == 2


async def test_double_over_asgi() -> None:
    double = DnsimpleDouble()
    async with doubled(double, asgi=True) as registrar:
        _, made = await buy(registrar, "served.org")
        assert made.name == "served.org" and double.charges[0]["amount"] == Decimal("12.50")
        assert (await registrar.set_auto_renew("served.org", False)).auto_renew is False
    wrong = DnsimpleRegistrar(token="not-the-token", account_id=double.account_id, base_url="http://dnsimple.test",
                              transport=httpx.ASGITransport(app=double.app))
    try:
        with pytest.raises(RegistrarError, match="API token") as refused:
            await wrong.domain("served.org")
        assert "not-the-token" not in str(refused.value)
    finally:
        await wrong.aclose()
