"""The registrar port's contract, through the port only: prices and availability, charges once per
key, refunds once, registration (again with the same charge: the same one), nameservers, the
registration as the registrar has it, renewal once per key, lock, auto-renew, the auth code, and
every failure in the port's terms (never with the API key in its words).

Fixtures (conftest.py): `registrar`, `impatient_registrar` (0.5 s timeout), `control` (the test's
hand on the registrar: fail, release, taken, reserved, set_price, transferred_away, expire, ledger),
`contact`, `api_key`. Every test runs on each adapter (the fake, DNSimple on its double), except
those marked fake_only, a promise DNSimple by design does not make (the reason is in the marker).

Money is judged by what the account paid in the end (`_paid`: charges and renewals less refunds),
not by when it moved: the fake takes it at `charge` and gives it back at `refund`, DNSimple takes
it with the registration and has nothing to give back (docs/domains.md)."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from svc.adapters.registrar.port import (
    Contact,
    NameUnavailable,
    NotInAccount,
    PaymentDeclined,
    Quote,
    Registrar,
    RegistrarError,
    RegistrarRejected,
    Registration,
)
from tests.support.wait import WAIT_SECONDS

YEAR = timedelta(days=365)


def _key() -> str:
    return f"key-{uuid.uuid4().hex}"


async def _charge(registrar: Registrar, name: str, years: int = 1, key: str | None = None) -> str:
    [quote] = await registrar.check([name])
    assert quote.available and quote.price_cents is not None
    return await registrar.charge(name=name, years=years, amount_cents=quote.price_cents * years, key=key or _key())


async def _register(registrar: Registrar, contact: Contact, name: str, years: int = 1,
                    key: str | None = None) -> Registration:
    charge_id = await _charge(registrar, name, years, key)
    return await registrar.register(name=name, years=years, contact=contact, charge_id=charge_id)


def _paid(ledger: list[dict[str, Any]], name: str) -> int:
    """What the account paid for `name` in the end, in cents (refunds taken off)."""
    sign = {"charge": 1, "renewal": 1, "refund": -1}
    return sum(sign[e["kind"]] * e["amountCents"] for e in ledger if e["name"] == name)


def _about(when: datetime, expected: datetime) -> bool:
    return abs(when - expected) < timedelta(minutes=1)


# --- prices and availability ---


async def test_check_quotes_each_name_in_the_order_asked(registrar: Registrar) -> None:
    quotes = await registrar.check(["example.org", "example.com", "example.io", "example.invalidtld"])
    assert quotes == [
        Quote("example.org", True, 1000, 1200),
        Quote("example.com", True, 1200, 1400),
        Quote("example.io", True, 3900, 3900),
        Quote("example.invalidtld", False, None, None),
    ]
    assert await registrar.check([]) == []


async def test_taken_and_reserved_names_are_not_available(registrar: Registrar, control: Any,
                                                          contact: Contact) -> None:
    await control.taken("held.com")
    await control.reserved("reserved.net")
    await _register(registrar, contact, "mine.dev")
    quotes = {q.name: q for q in await registrar.check(["held.com", "reserved.net", "mine.dev", "free.app"])}
    assert [quotes[n].available for n in ("held.com", "reserved.net", "mine.dev", "free.app")] == [
        False, False, False, True]
    assert quotes["free.app"].price_cents == 1600 and quotes["free.app"].renewal_cents == 1800


async def test_a_name_can_have_a_price_of_its_own(registrar: Registrar, control: Any) -> None:
    await control.set_price("premium.com", 250_000, 1400)
    [quote] = await registrar.check(["premium.com"])
    assert quote == Quote("premium.com", True, 250_000, 1400)


# --- money ---


async def test_the_same_key_is_charged_once(registrar: Registrar, control: Any, contact: Contact) -> None:
    key = _key()
    first = await registrar.charge(name="once.com", years=1, amount_cents=1200, key=key)
    again = await registrar.charge(name="once.com", years=1, amount_cents=1200, key=key)
    other = await registrar.charge(name="once.com", years=1, amount_cents=1200, key=_key())
    assert first == again and other != first
    # The registration, where a registrar may take the money instead, does not take it twice either.
    registration = await registrar.register(name="once.com", years=1, contact=contact, charge_id=first)
    assert await registrar.register(name="once.com", years=1, contact=contact, charge_id=again) == registration
    await registrar.refund(other)  # what svc does with a charge that paid for nothing
    assert _paid(await control.ledger(), "once.com") == 1200


async def test_a_charge_at_a_price_that_changed_is_refused(registrar: Registrar, control: Any) -> None:
    with pytest.raises(RegistrarRejected) as refused:
        await registrar.charge(name="cheap.com", years=1, amount_cents=999, key=_key())
    assert refused.value.field == "amountCents"
    assert await control.ledger() == []


async def test_a_declined_payment_is_not_charged_and_may_be_tried_again(
        registrar: Registrar, control: Any, contact: Contact) -> None:
    """Declined where the registrar takes the money: at the charge (the fake) or with the
    registration (DNSimple). In the registrar's words; the same key then pays once."""
    await control.fail("charge", "decline", message="Insufficient funds")
    key = _key()
    with pytest.raises(PaymentDeclined, match="Insufficient funds"):
        await _register(registrar, contact, "broke.com", key=key)
    assert await control.ledger() == []
    assert (await _register(registrar, contact, "broke.com", key=key)).name == "broke.com"
    assert [(e["kind"], e["name"], e["amountCents"]) for e in await control.ledger()] == [
        ("charge", "broke.com", 1200)]


async def test_a_charge_is_refunded_once(registrar: Registrar, control: Any) -> None:
    charge_id = await _charge(registrar, "refund.org")
    await registrar.refund(charge_id)
    await registrar.refund(charge_id)
    # Given back once, in full: the account paid nothing in the end (and was not paid either).
    assert _paid(await control.ledger(), "refund.org") == 0


async def test_refunding_an_unknown_charge_is_refused(registrar: Registrar) -> None:
    with pytest.raises(RegistrarRejected):
        await registrar.refund("ch_nosuchcharge")


# --- registration ---


async def test_register_gives_a_locked_auto_renewing_registration(registrar: Registrar, contact: Contact) -> None:
    registration = await _register(registrar, contact, "brand-new.com")
    assert registration.name == "brand-new.com"
    assert registration.locked and registration.auto_renew
    assert registration.expires_at.tzinfo is not None
    assert _about(registration.expires_at, datetime.now(UTC) + YEAR)
    assert len(registration.nameservers) >= 2 and isinstance(registration.nameservers, tuple)
    assert await registrar.domain("brand-new.com") == registration


@pytest.mark.fake_only("DNSimple's registration takes no term: 1-year registrations only (charge refuses years=2)")
async def test_a_registration_for_several_years(registrar: Registrar, control: Any, contact: Contact) -> None:
    registration = await _register(registrar, contact, "two-years.com", years=2)
    assert _about(registration.expires_at, datetime.now(UTC) + 2 * YEAR)
    assert _paid(await control.ledger(), "two-years.com") == 2400


async def test_registering_again_with_the_same_charge_answers_the_same_registration(
        registrar: Registrar, control: Any, contact: Contact) -> None:
    charge_id = await _charge(registrar, "again.net")
    first = await registrar.register(name="again.net", years=1, contact=contact, charge_id=charge_id)
    again = await registrar.register(name="again.net", years=1, contact=contact, charge_id=charge_id)
    assert again == first
    assert [e["kind"] for e in await control.ledger()] == ["charge"]
    # Another charge cannot register it a second time: it is ours already.
    other = await _charge(registrar, "again2.net")
    with pytest.raises((NameUnavailable, RegistrarRejected)):
        await registrar.register(name="again.net", years=1, contact=contact, charge_id=other)


async def test_a_taken_name_is_unavailable(registrar: Registrar, control: Any, contact: Contact) -> None:
    first = await _charge(registrar, "race.com")
    await control.taken("race.com")
    with pytest.raises(NameUnavailable):
        await registrar.register(name="race.com", years=1, contact=contact, charge_id=first)
    # Taken between the check and the registration, by the registrar's own account of it.
    charge_id = await _charge(registrar, "race2.com")
    await control.fail("register", "taken")
    with pytest.raises(NameUnavailable):
        await registrar.register(name="race2.com", years=1, contact=contact, charge_id=charge_id)
    # The charges are still there for svc to give back, and then nothing was paid for either name.
    await registrar.refund(charge_id)
    await registrar.refund(first)
    ledger = await control.ledger()
    assert _paid(ledger, "race.com") == _paid(ledger, "race2.com") == 0


@pytest.mark.parametrize(("change", "field"), [
    ({"phone": "555-1234"}, "contact.phone"),
    pytest.param({"phone": "+1 5555551234"}, "contact.phone", marks=pytest.mark.fake_only(
        "the DNSimple adapter writes an international number in DNSimple's +1.5555551234 form (documented)")),
    ({"email": "nobody"}, "contact.email"),
    pytest.param({"country": "gb"}, "contact.country", marks=pytest.mark.fake_only(
        "the DNSimple adapter sends the country in upper case (documented)")),
    ({"country": "GBR"}, "contact.country"),
    ({"city": ""}, "contact.city"),
    ({"postal_code": " "}, "contact.postalCode"),
])
async def test_a_bad_contact_is_rejected_naming_the_field(registrar: Registrar, contact: Contact,
                                                          change: dict[str, str], field: str) -> None:
    charge_id = await _charge(registrar, "contact.com")
    with pytest.raises(RegistrarRejected) as refused:
        await registrar.register(name="contact.com", years=1, contact=replace(contact, **change), charge_id=charge_id)
    assert refused.value.field == field
    # Nothing was registered: the same charge registers it with a good contact.
    registration = await registrar.register(name="contact.com", years=1, contact=contact, charge_id=charge_id)
    assert registration.name == "contact.com"


async def test_a_registration_needs_a_live_charge_for_that_name(registrar: Registrar, contact: Contact) -> None:
    for_other = await _charge(registrar, "other.com")
    refunded = await _charge(registrar, "paid.com")
    await registrar.refund(refunded)
    for charge_id in ("ch_nosuchcharge", for_other, refunded):
        with pytest.raises(RegistrarRejected) as refused:
            await registrar.register(name="paid.com", years=1, contact=contact, charge_id=charge_id)
        assert refused.value.field == "chargeId"
    used = await _charge(registrar, "first.com")
    await registrar.register(name="first.com", years=1, contact=contact, charge_id=used)


async def test_a_rejection_names_the_field_the_registrar_names(registrar: Registrar, control: Any,
                                                               contact: Contact) -> None:
    charge_id = await _charge(registrar, "rejected.com")
    await control.fail("register", "reject", field="years", message="this registry sells one year at a time")
    with pytest.raises(RegistrarRejected, match="one year at a time") as refused:
        await registrar.register(name="rejected.com", years=1, contact=contact, charge_id=charge_id)
    assert refused.value.field == "years"


# --- the registration afterwards ---


async def test_set_nameservers(registrar: Registrar, contact: Contact) -> None:
    await _register(registrar, contact, "ns.org")
    updated = await registrar.set_nameservers("ns.org", ["ns1.svc.example", "ns2.svc.example", "ns3.svc.example"])
    assert updated.nameservers == ("ns1.svc.example", "ns2.svc.example", "ns3.svc.example")
    assert (await registrar.domain("ns.org")).nameservers == updated.nameservers
    for bad in (["ns1.svc.example"], ["ns1.svc.example", "not a host"], [f"ns{i}.svc.example" for i in range(14)]):
        with pytest.raises(RegistrarRejected) as refused:
            await registrar.set_nameservers("ns.org", bad)
        assert refused.value.field == "nameservers"
    assert (await registrar.domain("ns.org")).nameservers == updated.nameservers


async def test_a_domain_not_in_the_account(registrar: Registrar, control: Any, contact: Contact) -> None:
    with pytest.raises(NotInAccount):
        await registrar.domain("never-here.com")
    await _register(registrar, contact, "leaving.com")
    await control.transferred_away("leaving.com")
    with pytest.raises(NotInAccount):
        await registrar.domain("leaving.com")
    with pytest.raises(NotInAccount):
        await registrar.set_lock("leaving.com", False)
    with pytest.raises(NotInAccount):
        await registrar.renew("leaving.com", years=1, key=_key())
    with pytest.raises(NotInAccount):
        await registrar.set_nameservers("leaving.com", ["ns1.svc.example", "ns2.svc.example"])
    [quote] = await registrar.check(["leaving.com"])
    assert not quote.available


async def test_the_registrar_is_the_source_of_truth_for_expiry(registrar: Registrar, control: Any,
                                                               contact: Contact) -> None:
    await _register(registrar, contact, "expiring.com")
    soon = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    await control.expire("expiring.com", soon)
    assert (await registrar.domain("expiring.com")).expires_at == soon


async def test_renew_extends_the_expiry_once_per_key(registrar: Registrar, control: Any, contact: Contact) -> None:
    registration = await _register(registrar, contact, "renew.dev")
    key = _key()
    renewed = await registrar.renew("renew.dev", years=2, key=key)
    assert renewed.expires_at == registration.expires_at + 2 * YEAR
    assert await registrar.renew("renew.dev", years=2, key=key) == renewed
    assert (await registrar.domain("renew.dev")).expires_at == renewed.expires_at
    renewals = [e for e in await control.ledger() if e["kind"] == "renewal"]
    assert [(e["name"], e["amountCents"]) for e in renewals] == [("renew.dev", 3400)]


async def test_a_declined_renewal_changes_nothing(registrar: Registrar, control: Any, contact: Contact) -> None:
    registration = await _register(registrar, contact, "declined.dev")
    await control.fail("renew", "decline")
    key = _key()
    with pytest.raises(PaymentDeclined):
        await registrar.renew("declined.dev", years=1, key=key)
    assert (await registrar.domain("declined.dev")).expires_at == registration.expires_at
    assert [e["kind"] for e in await control.ledger()] == ["charge"]
    renewed = await registrar.renew("declined.dev", years=1, key=key)
    assert renewed.expires_at == registration.expires_at + YEAR


async def test_lock_and_auto_renew(registrar: Registrar, contact: Contact) -> None:
    await _register(registrar, contact, "flags.app")
    unlocked = await registrar.set_lock("flags.app", False)
    assert not unlocked.locked and unlocked.auto_renew
    manual = await registrar.set_auto_renew("flags.app", False)
    assert not manual.locked and not manual.auto_renew
    assert await registrar.domain("flags.app") == manual
    relocked = await registrar.set_lock("flags.app", True)
    assert relocked.locked and not relocked.auto_renew
    assert (await registrar.set_auto_renew("flags.app", True)).auto_renew


async def test_auth_code(registrar: Registrar, contact: Contact) -> None:
    await _register(registrar, contact, "transfer.io")
    code = await registrar.auth_code("transfer.io")
    assert isinstance(code, str) and len(code) >= 8
    with pytest.raises(NotInAccount):
        await registrar.auth_code("not-mine.io")


# --- failures ---


def _calls(contact: Contact) -> dict[str, Any]:
    """One call of each step on `fail.com` (registered, with a live charge `ch` for `spare.com`)."""
    return {
        "check": lambda r, ch: r.check(["fail.com"]),
        "charge": lambda r, ch: r.charge(name="fail.com", years=1, amount_cents=1200, key=_key()),
        "register": lambda r, ch: r.register(name="spare.com", years=1, contact=contact, charge_id=ch),
        "nameservers": lambda r, ch: r.set_nameservers("fail.com", ["a.svc.example", "b.svc.example"]),
        "domain": lambda r, ch: r.domain("fail.com"),
        "renew": lambda r, ch: r.renew("fail.com", years=1, key=_key()),
        "lock": lambda r, ch: r.set_lock("fail.com", False),
        "auto-renew": lambda r, ch: r.set_auto_renew("fail.com", False),
        "auth-code": lambda r, ch: r.auth_code("fail.com"),
        "refund": lambda r, ch: r.refund(ch),
    }


STEPS = ["check", "charge", "register", "nameservers", "domain", "renew", "lock", "auto-renew", "auth-code",
         pytest.param("refund", marks=pytest.mark.fake_only(
             "DNSimple's refund sends no request (nothing was taken): nothing can fail"))]


@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("mode", ["error", "garbage"])
async def test_a_failing_registrar_is_a_registrar_error_on_every_call(
        registrar: Registrar, control: Any, contact: Contact, api_key: str, mode: str, step: str) -> None:
    await _register(registrar, contact, "fail.com")
    spare = await _charge(registrar, "spare.com")
    call = _calls(contact)[step]
    before = await control.ledger()
    await control.fail(step, mode)
    with pytest.raises(RegistrarError) as failed:
        await call(registrar, spare)
    assert api_key not in str(failed.value) and str(failed.value)
    assert await control.ledger() == before  # nothing was charged or given back
    # Only the next call failed: the same call now works.
    await call(registrar, spare)


async def test_failures_queue_in_order(registrar: Registrar, control: Any) -> None:
    await control.fail("check", "error", times=2)
    await control.fail("check", "garbage")
    for _ in range(3):
        with pytest.raises(RegistrarError):
            await registrar.check(["queue.com"])
    assert (await registrar.check(["queue.com"]))[0].available


async def test_a_registrar_that_does_not_answer_is_an_error_in_time(
        impatient_registrar: Registrar, control: Any, api_key: str) -> None:
    await control.fail("charge", "timeout")
    # The registrar holds the call for good: only the client's own bound (half a second) ends it, as
    # "did not answer" (no wall-clock assert: the generous bound stops a client that would hang).
    with pytest.raises(RegistrarError, match="did not answer") as failed:
        await asyncio.wait_for(impatient_registrar.charge(name="slow.com", years=1, amount_cents=1200, key=_key()),
                               WAIT_SECONDS)
    assert api_key not in str(failed.value)
    # The next call answers.
    assert (await asyncio.wait_for(impatient_registrar.check(["slow.com"]), WAIT_SECONDS))[0].available


async def test_an_answer_lost_after_the_work_was_done_is_resent_safely(
        registrar: Registrar, impatient_registrar: Registrar, control: Any, contact: Contact) -> None:
    """The registrar charged, registered or renewed, but svc never heard (it gave up waiting): the
    resend does not do it twice. The renewal's key is svc's (`{id}:renew:{expiry}:{years}`): with the
    expiry it starts from in the key, DNSimple, which takes no key, knows the renewal is done."""
    key = _key()
    await control.fail("charge", "lost")
    with pytest.raises(RegistrarError):
        await impatient_registrar.charge(name="lost.com", years=1, amount_cents=1200, key=key)
    charge_id = await registrar.charge(name="lost.com", years=1, amount_cents=1200, key=key)
    await control.fail("register", "lost")
    with pytest.raises(RegistrarError):
        await impatient_registrar.register(name="lost.com", years=1, contact=contact, charge_id=charge_id)
    registration = await registrar.register(name="lost.com", years=1, contact=contact, charge_id=charge_id)
    assert await registrar.domain("lost.com") == registration
    renewal_key = f"{key}:renew:{registration.expires_at.date().isoformat()}:1"
    await control.fail("renew", "lost")
    with pytest.raises(RegistrarError):
        await impatient_registrar.renew("lost.com", years=1, key=renewal_key)
    renewed = await registrar.renew("lost.com", years=1, key=renewal_key)
    assert renewed.expires_at == registration.expires_at + YEAR
    await control.release()
    assert [(e["kind"], e["name"], e["amountCents"]) for e in await control.ledger()] == [
        ("charge", "lost.com", 1200), ("renewal", "lost.com", 1400)]


@pytest.mark.fake_only("DNSimple takes no idempotency key: a renewal resent by another process is known as done only "
                       "by the expiry date in svc's key shape; an undated key renews twice (documented in dnsimple.py)")
async def test_a_lost_renewal_resent_by_another_client_renews_once_under_any_key(
        registrar: Registrar, impatient_registrar: Registrar, control: Any, contact: Contact) -> None:
    registration = await _register(registrar, contact, "lost.org")
    key = _key()
    await control.fail("renew", "lost")
    with pytest.raises(RegistrarError):
        await impatient_registrar.renew("lost.org", years=1, key=key)
    renewed = await registrar.renew("lost.org", years=1, key=key)
    assert renewed.expires_at == registration.expires_at + YEAR
    await control.release()
    assert _paid(await control.ledger(), "lost.org") == 1000 + 1200


# --- the TLDs a search expands a word over, and the DS records sent to the registry ---

async def test_tlds_are_the_ones_the_registrar_sells(registrar: Registrar) -> None:
    tlds = await registrar.tlds()
    assert {"com", "dev", "io", "org"} <= set(tlds)
    assert all(t == t.lower() and not t.startswith(".") for t in tlds)
    quotes = await registrar.check([f"tld-contract-{uuid.uuid4().hex[:8]}.{tld}" for tld in tlds])
    assert all(q.available and q.price_cents for q in quotes)  # every TLD listed is for sale


DS_A = "2371 13 2 684A1F049D7D082B7F98691657DA5A65764913DF7F065F6F8C36EDF62D66CA03"
DS_B = "44620 8 2 C1F6E04A5A61FBF65BF9DC8294C363CF11C89E802D926BDAB79C55D27BEFA94F"


async def test_ds_records_become_exactly_what_is_sent(registrar: Registrar, contact: Contact) -> None:
    name = f"ds-contract-{uuid.uuid4().hex[:8]}.com"
    await _register(registrar, contact, name)
    assert await registrar.set_ds(name, [DS_A.lower()]) == [DS_A]  # the digest's case is forgiven
    assert await registrar.set_ds(name, [DS_A, DS_B]) == [DS_A, DS_B]
    assert await registrar.set_ds(name, [DS_B]) == [DS_B]  # a resend of the same is the same
    assert await registrar.set_ds(name, [DS_B]) == [DS_B]
    assert await registrar.set_ds(name, []) == []
    with pytest.raises(NotInAccount):
        await registrar.set_ds(f"not-ours-{uuid.uuid4().hex[:8]}.com", [DS_A])
    with pytest.raises(RegistrarRejected):
        await registrar.set_ds(name, ["not a ds record"])
