"""`svc domains check|buy|import|list|show|renew|lock|unlock|auto-renew|auth-code|sync`: an org's
domain names, bought through the registrar svc is configured with, or imported from elsewhere.

`buy` spends money: it shows the price and the contact it sends (the registrar's verification email
goes to the contact's address) and asks before buying, unless --yes. The purchase is a saga on the
server (domains/domain_names/saga.py): while the request runs, the command reads the domain's
history and prints each step as it is done. A purchase that stopped midway (502 saga_incomplete)
continues where it stopped when the same command runs again; what was paid is never charged twice."""

from __future__ import annotations

import secrets
import shlex
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer

from svc.cli import output
from svc.cli.client import Api, ApiError, CliError, seg
from svc.cli.commands.projects import OrgOption, local_manifest, resolve_org
from svc.cli.output import JsonFlag
from svc.kit import money

if TYPE_CHECKING:
    from rich.console import Console
    from rich.status import Status

HELP = "Domain names: check prices, buy, import, renew, lock, auto-renew, transfer out."  # its line in `svc --help`
app = typer.Typer(help="An org's domain names: check prices, buy (through svc's registrar) or import, then renew, "
                       "lock, auto-renew, the transfer-out code and a sync with the registrar.",
                  no_args_is_help=True)

POLL_SECONDS = 0.5  # how often `buy` reads the domain's history while the purchase runs
PURCHASE_SECONDS = 300.0  # a purchase makes several registrar calls, each bounded by the server's own timeout
RESUMABLE = ("pending_payment", "registering", "setting_ns")  # a purchase stopped midway: `buy` continues it

NameArg = Annotated[str, typer.Argument(metavar="NAME", help="The domain, such as example.com.")]
YesOption = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask (needed with --json and in scripts).")]

# The registrant: (the request's key, the option, what to ask for).
CONTACT_FIELDS = (
    ("name", "--name", "The registrant's full name"),
    ("email", "--email", "The registrant's email (the registrar's verification email goes there)"),
    ("phone", "--phone", "Phone, as +<country code>.<number> (+1.5555551234)"),
    ("street", "--street", "Street address"),
    ("city", "--city", "City"),
    ("postalCode", "--postal-code", "Postal code"),
    ("country", "--country", "Country, two letters (US)"),
)

# Hints after an API error, by its code: the CLI's own next step.
_HINTS = {
    "registrar_not_configured": "this svc has no registrar (its `svc serve` banner says why); "
                                "`svc domains import NAME` takes a domain registered elsewhere",
    "domain_imported": "an imported domain's registration is managed at its own registrar",
}


# --- helpers ---

def _org(api: Api, org: str | None) -> str:
    return resolve_org(api, org, local_manifest() if not org else None)


def _path(org: str) -> str:
    return f"/v1/orgs/{seg(org)}/domains"


def _one(org: str, name: str) -> str:
    return f"{_path(org)}/{seg(name)}"


def _command(org: str, *words: str) -> str:
    """A command to paste, with the org named."""
    return " ".join(["svc", "domains", *(shlex.quote(w) for w in words), "--org", shlex.quote(org)])


def _dollars(cents: Any) -> str | None:
    return None if cents is None else money.dollars(int(cents) * money.PER_CENT)


def _day(ts: Any) -> str:
    return (output.when(ts) or "-")[:10]


def _nameservers(d: dict[str, Any]) -> str:
    """Its nameservers as people write them: without the trailing dot."""
    return ", ".join(str(n).rstrip(".") for n in d.get("nameservers") or [])


def _years(n: int) -> str:
    return f"{n} year" if n == 1 else f"{n} years"


@contextmanager
def explained(org: str | None = None, name: str | None = None, resume: str | None = None) -> Iterator[None]:
    """API errors with a hint in the CLI's terms (`resume`: the command that continues a purchase)."""
    try:
        yield
    except ApiError as exc:
        if exc.hint is None and resume is not None and (exc.code in ("saga_incomplete", "registrar_error")
                                                        or exc.status == 502):
            exc.hint = (f"run the same command again to continue ({resume}, with the same contact): it resumes "
                        "where the purchase stopped, and the domain is charged once")
        elif exc.hint is None and resume is not None and exc.code == "payment_failed":
            exc.hint = f"nothing was charged: once the payment is sorted out, the same command continues ({resume})"
        elif exc.hint is None and exc.code in _HINTS:
            exc.hint = _HINTS[exc.code]
        elif exc.hint is None and exc.code == "not_found" and name is not None and org is not None:
            exc.hint = f"`{_command(org, 'list')}` shows the org's domains"
        raise


def _render_domain(d: dict[str, Any], first: str | None = None) -> Any:
    """A domain in a few lines: its state, expiry, nameservers, why a purchase stopped, the notice."""
    def render(c: Console) -> None:
        from rich.text import Text

        how = "bought" if d.get("source") == "purchase" else "imported"
        line = f"{d.get('name')}: {d.get('status')} ({how})"
        if d.get("expiresAt"):
            line += f", until {_day(d.get('expiresAt'))}"
        if d.get("source") == "purchase":
            lock, renews = "locked" if d.get("locked") else "unlocked", "on" if d.get("autoRenew") else "off"
            line += f", {lock}, auto-renew {renews}"
        if first:
            c.print(Text(first), soft_wrap=True)
        c.print(Text(line + "."), soft_wrap=True)
        c.print(Text("Nameservers: " + (_nameservers(d) or "none yet")), soft_wrap=True)
        if d.get("lastError"):
            c.print(Text(f"Stopped: {d['lastError']}"), soft_wrap=True)
        if d.get("notice"):
            c.print(Text(str(d["notice"])), soft_wrap=True)
    return render


# --- check, list, show ---

@app.command("search")
@app.command("check")
def check(ctx: typer.Context,
          names: Annotated[list[str], typer.Argument(
              metavar="WORD|NAME", help="A word to search under the registrar's TLDs (one, 10 TLDs at most), or "
                                        "full names to price (20 at most).")],
          org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Availability and prices, from the registrar (members): `check acme` searches acme.com, acme.net,
    acme.org, acme.io, acme.dev, ... (the TLDs the registrar sells); `check acme.com acme.dev` prices those."""
    with Api.for_context(ctx) as api, explained():
        slug = _org(api, org)
        data = api.post(_path(slug) + "/check", {"names": names})
    results = data.get("results") or []
    rows = [[r.get("name"), bool(r.get("available")), _dollars(r.get("priceCents")),
             f"{_dollars(r.get('renewalCents'))}/year" if r.get("renewalCents") is not None else None]
            for r in results]

    def render(c: Console) -> None:
        c.print(output.table(["NAME", "AVAILABLE", "PRICE", "RENEWAL"], rows, shrink={"NAME": 16}))
        if any(r.get("available") for r in results):
            c.print("Prices are a first year's: `svc domains buy NAME --years N` buys one (it asks first).",
                    style="dim")

    output.emit(as_json, data, render)


@app.command("list")
def list_domains(ctx: typer.Context, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """The org's domains: bought and imported, with their state and expiry."""
    with Api.for_context(ctx) as api, explained():
        slug = _org(api, org)
        data = api.get(_path(slug))
    rows = [[d.get("name"), d.get("status"), d.get("source"), _day(d.get("expiresAt")) if d.get("expiresAt") else None,
             d.get("locked"), d.get("autoRenew")] for d in data.get("domains") or []]
    output.emit(as_json, data, lambda c: c.print(output.table(
        ["NAME", "STATUS", "SOURCE", "EXPIRES", "LOCKED", "AUTO-RENEW"], rows, shrink={"NAME": 16},
        empty=f"{slug} has no domains: `svc domains check NAME` prices one, `svc domains import NAME` takes one "
              "registered elsewhere.")))


def _history_table(history: list[dict[str, Any]]) -> Any:
    rows = [[output.when(h.get("at")), h.get("action"), h.get("detail")] for h in reversed(history)]
    return output.table(["WHEN", "STEP", "DETAIL"], rows, shrink={"DETAIL": 24}, empty="No history.")


@app.command("show")
def show(ctx: typer.Context, name: NameArg, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """One domain and its history, oldest first (the purchase's steps, renewals, changes)."""
    with Api.for_context(ctx) as api:
        slug = _org(api, org)
        with explained(slug, name):
            data = api.get(_one(slug, name))

    def render(c: Console) -> None:
        _render_domain(data)(c)
        if data.get("status") in RESUMABLE:
            c.print(f"Its purchase stopped midway: `{_command(slug, 'buy', str(data.get('name')))}` with the same "
                    "contact continues it (what was paid is not charged again).", style="dim", soft_wrap=True)
        c.print()
        c.print(_history_table(data.get("history") or []))

    output.emit(as_json, data, render)


# --- buy ---

def _contact(given: dict[str, str | None], ask: bool) -> dict[str, str]:
    """The registrant from the options; the missing fields asked for, or (--yes, --json) refused."""
    missing = [flag for key, flag, _ in CONTACT_FIELDS if not (given.get(key) or "").strip()]
    if missing and not ask:
        raise CliError(f"Missing {', '.join(missing)}: with --yes or --json, every contact option is needed "
                       "(the registrant the registrar records)", "contact_needed")
    contact: dict[str, str] = {}
    for key, _, label in CONTACT_FIELDS:
        value = (given.get(key) or "").strip()
        while not value:
            value = output.ask(f"{label}: ").strip()
        contact[key] = value.upper() if key == "country" else value
    return contact


def _describe_contact(contact: dict[str, str]) -> None:
    output.note("The registrant (sent to the registrar; svc keeps none of it):")
    output.note(f"  {contact['name']}, {contact['email']}, {contact['phone']}")
    output.note(f"  {contact['street']}, {contact['postalCode']} {contact['city']}, {contact['country']}")
    output.note(f"The registrar's verification email goes to {contact['email']}: the registrant must confirm it, "
                "or the registry may suspend the domain.")


def _existing(api: Api, slug: str, name: str) -> dict[str, Any] | None:
    """The org's domain of that name with its history; None when the org has none."""
    try:
        found: dict[str, Any] = api.get(_one(slug, name))
    except ApiError as exc:
        if exc.status == 404:
            return None
        raise
    return found


def _line(h: dict[str, Any]) -> tuple[str, str, str]:
    return str(h.get("at")), str(h.get("action")), str(h.get("detail"))


class _Steps:
    """The purchase's history as it grows: each new line printed once, oldest first."""

    def __init__(self, api: Api, path: str, seen: set[tuple[str, str, str]]) -> None:
        self.api = api
        self.path = path
        self.seen = seen

    def read(self, console: Console, status: Status | None) -> None:
        try:
            detail = self.api.get(self.path)
        except CliError:
            return  # not there yet (404 before the first step), or a hiccup: the POST's answer decides
        from rich.text import Text

        for h in reversed(detail.get("history") or []):
            key = _line(h)
            if key in self.seen:
                continue
            self.seen.add(key)
            console.print(Text.assemble(("  " + str(h.get("action")).ljust(11), "bold"), f" {h.get('detail')}"),
                          soft_wrap=True)
        if status is not None:
            status.update(f"Buying {detail.get('name')}: {detail.get('status')}...")


def _purchase(api: Api, path: str, body: dict[str, Any], steps: _Steps, again: str) -> dict[str, Any]:
    """POST the purchase in a thread; meanwhile read the history every POLL_SECONDS and print the
    steps done. The POST's answer, or its error raised here (`again`: the command that continues)."""
    api.http.read_seconds = PURCHASE_SECONDS
    outcome: dict[str, Any] = {}

    def post() -> None:
        try:
            outcome["domain"] = api.post(path, body)
        except BaseException as exc:  # handed to the waiting thread, which raises it
            outcome["error"] = exc

    worker = threading.Thread(target=post, name="svc-domains-buy", daemon=True)
    console = output.err()
    try:
        with console.status(f"Buying {body['name']}...") as status:
            worker.start()
            while True:
                worker.join(POLL_SECONDS)
                done = not worker.is_alive()
                steps.read(console, None if done else status)
                if done:
                    break
    except KeyboardInterrupt:
        output.note(f"Stopped waiting: the purchase goes on at svc. `{again.replace(' buy ', ' show ', 1)}` tells "
                    f"where it is; should it stop midway, `{again}` (with the same contact) continues it.")
        raise
    if "error" in outcome:
        raise outcome["error"]
    found: dict[str, Any] = outcome["domain"]
    return found


@app.command("buy")
def buy(ctx: typer.Context, name: NameArg,
        years: Annotated[int, typer.Option(min=1, max=10, metavar="N", help="Years to register it for.")] = 1,
        registrant: Annotated[str | None, typer.Option("--name", metavar="PERSON",
                                                       help="The registrant's full name.")] = None,
        email: Annotated[str | None, typer.Option(metavar="EMAIL", help=(
            "The registrant's email: the registrar's verification email goes there."))] = None,
        phone: Annotated[str | None, typer.Option(metavar="PHONE", help="+<country code>.<number>, "
                                                                         "as +1.5555551234.")] = None,
        street: Annotated[str | None, typer.Option(metavar="STREET", help="Street address.")] = None,
        city: Annotated[str | None, typer.Option(metavar="CITY", help="City.")] = None,
        postal_code: Annotated[str | None, typer.Option("--postal-code", metavar="CODE", help="Postal code.")] = None,
        country: Annotated[str | None, typer.Option(metavar="CC", help="Two letters (ISO 3166-1), as US.")] = None,
        yes: YesOption = False, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Buy a domain (admins): shows the price and the contact, asks, then pays, registers it and puts
    it on svc's nameservers, printing each step. Run again after a stop, it continues (charged once)."""
    if as_json and not yes:
        raise CliError("--json asks nothing: add --yes to buy (the price and contact are shown on stderr)",
                       "confirm_needed")
    given = {"name": registrant, "email": email, "phone": phone, "street": street, "city": city,
             "postalCode": postal_code, "country": country}
    ask = not (yes or as_json)
    if not ask:
        _contact(given, ask=False)  # refused before anything is sent
    with Api.for_context(ctx) as api:
        slug = _org(api, org)
        again = _command(slug, "buy", name)
        with explained(slug, name, resume=again):
            existing = _existing(api, slug, name)
            if existing is not None and existing.get("status") not in RESUMABLE:
                output.emit(as_json, existing, _render_domain(
                    existing, f"{existing.get('name')} is {slug}'s already; nothing was bought."))
                return
            if existing is None:
                quote = (api.post(_path(slug) + "/check", {"names": [name]}).get("results") or [{}])[0]
                full = str(quote.get("name") or name)
                if not quote.get("available") or quote.get("priceCents") is None:
                    raise CliError(f"{full} is not available: somebody holds it, or the registry reserves it",
                                   "domain_unavailable", hint="`svc domains check NAME...` prices other names")
                total = _dollars(int(quote["priceCents"]) * years)
                renewal = _dollars(quote.get("renewalCents"))
                output.note(f"{full}: {total} for {_years(years)} ({_dollars(quote['priceCents'])} a year"
                            + (f"; then {renewal} a year to renew" if renewal else "") + ").")
                question = f"Buy {full} for {total}?"
                seen: set[tuple[str, str, str]] = set()
            else:
                full = str(existing.get("name"))
                history = existing.get("history") or []
                seen = {_line(h) for h in history}
                quoted = next((str(h.get("detail")) for h in history if h.get("action") == "quote"), None)
                paid = existing.get("status") != "pending_payment"
                output.note(f"{full}'s purchase stopped at {existing.get('status')}"
                            + (f" ({existing['lastError']})" if existing.get("lastError") else "") + ".")
                if paid:
                    output.note("Already paid: continuing it charges nothing more.")
                else:
                    output.note("Not paid yet: continuing it charges the registrar's price"
                                + (f" ({quoted})" if quoted else "") + ".")
                question = f"Continue the purchase of {full}?"
            contact = _contact(given, ask=ask)
            _describe_contact(contact)
            output.confirm(yes, as_json, question, "buy", "Nothing was bought")
            body = {"name": full, "years": years, "contact": contact}
            steps = _Steps(Api(api.base_url, api.token, origin=api.origin), _one(slug, full), seen)
            try:
                data = _purchase(api, _path(slug), body, steps, again)
            finally:
                steps.api.close()
    output.emit(as_json, data, _render_domain(data, f"Bought {data.get('name')}."))


# --- import, renew, lock, auto-renew, auth code, sync ---

@app.command("import")
def import_domain(ctx: typer.Context, name: NameArg, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """A domain registered elsewhere (admins): its zone on svc's nameservers; no registrar call. Then
    point its NS at them, at its registrar."""
    with Api.for_context(ctx) as api:
        slug = _org(api, org)
        with explained(slug, name):
            data = api.post(_path(slug) + "/import", {"name": name})

    def render(c: Console) -> None:
        _render_domain(data, f"Imported {data.get('name')}: its zone is on svc's nameservers.")(c)
        c.print(f"At its registrar, set its nameservers to: {_nameservers(data)}; "
                f"`svc dns records list {data.get('name')}` shows its records.", soft_wrap=True)

    output.emit(as_json, data, render)


@app.command("renew")
def renew(ctx: typer.Context, name: NameArg,
          years: Annotated[int, typer.Option(min=1, max=10, metavar="N", help="Years to add.")],
          yes: YesOption = False, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Renew a bought domain for N more years (admins; charged by the registrar); asks first unless --yes."""
    if as_json and not yes:
        raise CliError("--json asks nothing: add --yes to renew", "confirm_needed")
    with Api.for_context(ctx) as api:
        slug = _org(api, org)
        with explained(slug, name):
            if not yes:
                quote = (api.post(_path(slug) + "/check", {"names": [name]}).get("results") or [{}])[0]
                cents = quote.get("renewalCents")
                price = (f"{_dollars(int(cents) * years)} ({_dollars(cents)} a year)" if cents is not None
                         else "the registrar's renewal price")
                output.confirm(yes, as_json, f"Renew {quote.get('name') or name} for {_years(years)}, for {price}?",
                         "renew", "Nothing was renewed")
            # One key for this renewal: a resend (a dropped connection) is charged once.
            data = api.post(_one(slug, name) + "/renew", {"years": years}, idempotency_key=secrets.token_urlsafe(16))
    output.emit(as_json, data, _render_domain(data, f"Renewed {data.get('name')} for {_years(years)}."))


def _lock(ctx: typer.Context, name: str, locked: bool, org: str | None, as_json: bool) -> None:
    with Api.for_context(ctx) as api:
        slug = _org(api, org)
        with explained(slug, name):
            data = api.post(_one(slug, name) + "/lock", {"locked": locked})
    said = (f"{data.get('name')} is locked: it cannot be transferred to another registrar." if data.get("locked") else
            f"{data.get('name')} is unlocked: it can be transferred away (`svc domains auth-code "
            f"{data.get('name')}` gives the code another registrar asks for).")
    output.emit(as_json, data, _render_domain(data, said))


@app.command("lock")
def lock(ctx: typer.Context, name: NameArg, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Turn the registrar's transfer lock on (admins)."""
    _lock(ctx, name, True, org, as_json)


@app.command("unlock")
def unlock(ctx: typer.Context, name: NameArg, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Turn the transfer lock off (admins), before a transfer to another registrar."""
    _lock(ctx, name, False, org, as_json)


@app.command("auto-renew")
def auto_renew(ctx: typer.Context, name: NameArg,
               state: Annotated[str, typer.Argument(metavar="on|off", help="on: svc renews it before it expires; "
                                                                           "off: it lets it lapse.")],
               org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Whether svc renews the domain before it expires (admins). The registrar-side auto-renew stays on."""
    if state not in ("on", "off"):
        raise CliError("on or off", "bad_request")
    with Api.for_context(ctx) as api:
        slug = _org(api, org)
        with explained(slug, name):
            data = api.post(_one(slug, name) + "/auto-renew", {"enabled": state == "on"})
    output.emit(as_json, data, _render_domain(data, f"Auto-renew of {data.get('name')} is {state}."))


@app.command("auth-code")
def auth_code(ctx: typer.Context, name: NameArg, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """The code another registrar asks for to transfer the domain away (admins). Printed once: svc
    does not record it."""
    with Api.for_context(ctx) as api:
        slug = _org(api, org)
        with explained(slug, name):
            data = api.post(_one(slug, name) + "/auth-code")
    if not as_json:
        output.note(f"The transfer code of {name} (svc does not record it: keep it until the transfer is done; the "
                    "domain's history says only that it was asked for):")
    output.emit(as_json, data, lambda c: output.say(str(data.get("code"))))


@app.command("sync")
def sync(ctx: typer.Context, name: NameArg, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Read the domain back from the registrar (members): expiry, lock, nameservers and auto-renew are
    the registrar's; absent from its account, the domain is marked transferred_out."""
    with Api.for_context(ctx) as api:
        slug = _org(api, org)
        with explained(slug, name):
            data = api.post(_one(slug, name) + "/sync")
    output.emit(as_json, data, _render_domain(data, f"Read {data.get('name')} back from the registrar."))

