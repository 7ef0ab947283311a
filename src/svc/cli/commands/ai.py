"""`svc ai models|status|grant|revoke|credit|ledger|topup|autotopup`: the models a project's worker
calls through env.ai, its grant and caps, and the org's credit, which pays for the calls.

Amounts are dollars: 5, 2.50 or '$5' (quoted: a shell reads $5 as a variable). `--json` shows them
in micro-cents, as the API does (a micro-cent is a millionth of a cent: $5 is 500000000).
`topup` opens the billing provider's checkout and waits (with a spinner) until the payment's
webhook has raised the balance."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from svc.cli import output
from svc.cli.client import Api, CliError, seg
from svc.cli.commands.login import _open_browser
from svc.cli.commands.projects import OrgOption, ProjectOption, project_path, resolve_org, target
from svc.cli.output import JsonFlag
from svc.kit import money

if TYPE_CHECKING:
    from rich.console import Console

HELP = "AI for a project's worker (env.ai): models, grants, the org's credit and ledger."
app = typer.Typer(help="AI for a project's worker (env.ai): the models, a project's grant and caps, and the "
                       "org's credit (buy, auto top-up, ledger).", no_args_is_help=True)

POLL_SECONDS = 1.0


def _per_million(micro_cents: Any) -> str:
    return money.dollars(int(micro_cents or 0)) + "/M"


def _amount(text: str, what: str) -> int:
    """Dollars (5, 2.50, $5) as micro-cents."""
    try:
        value = money.parse_dollars(text)
    except ValueError as exc:
        raise CliError(f"{what}: {exc}", "bad_request") from None
    if value <= 0:
        raise CliError(f"{what}: a positive amount", "bad_request")
    return value


@app.command("models")
def models(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """Every model env.ai can call: its lane, and its price per million tokens in and out."""
    with Api.for_context(ctx) as api:
        data = api.get("/v1/ai/models")
    rows = [[m.get("id"), m.get("lane"), m.get("provider") or "-", _per_million(m.get("inputMicroCentsPerMTok")),
             _per_million(m.get("outputMicroCentsPerMTok"))] for m in data.get("models") or []]
    output.emit(as_json, data, lambda c: c.print(output.table(["MODEL", "LANE", "PROVIDER", "INPUT", "OUTPUT"], rows,
                                                              empty="No models in this svc's catalog.")))


def _render_status(proj: str, data: dict[str, Any]) -> Any:
    def render(c: Console) -> None:
        if data.get("granted"):
            c.print(f"{proj} may call env.ai (its svc.json declaring \"ai\": true).")
        else:
            c.print(f"{proj} may not call env.ai: `svc ai grant` lets it.")
        caps = [("maxOutputTokens", data.get("maxOutputTokens")), ("maxInputTokens", data.get("maxInputTokens")),
                ("maxCallsPerMinute", data.get("maxCallsPerMinute"))]
        c.print("Caps: " + ", ".join(f"{name} {value or 'the model decides'}" for name, value in caps)
                + f", {money.dollars(int(data.get('maxMicroCentsPerDay') or 0))} a day.")
        c.print(f"Spent in 24 hours: {money.dollars(int(data.get('spentMicroCents24h') or 0))}; the org's balance: "
                f"{money.dollars(int(data.get('balanceMicroCents') or 0))}.")
    return render


@app.command("status")
def status(ctx: typer.Context, project: ProjectOption = None, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """The project's grant, its caps, what it spent in 24 hours and the org's balance."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        data = api.get(project_path(slug, proj) + "/ai")
    output.emit(as_json, data, _render_status(proj, data))


@app.command("grant")
def grant(ctx: typer.Context, project: ProjectOption = None, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Let the project's worker call env.ai (members); it gets env.ai at its next request, no redeploy."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        data = api.post(project_path(slug, proj) + "/ai")
    output.emit(as_json, data, _render_status(proj, data))


@app.command("revoke")
def revoke(ctx: typer.Context, project: ProjectOption = None, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Stop env.ai for the project (admins); the ledger and the org's balance are kept."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        api.delete(project_path(slug, proj) + "/ai")
    output.emit_line(as_json, {"project": proj, "granted": False}, f"{proj} may no longer call env.ai.")


def _credit_path(slug: str) -> str:
    return f"/v1/orgs/{seg(slug)}/ai"


def _render_credit(slug: str, data: dict[str, Any]) -> Any:
    def render(c: Console) -> None:
        c.print(f"{slug}'s AI credit: {money.dollars(int(data.get('balanceMicroCents') or 0))}.")
        auto = data.get("autoTopup") or {}
        if auto.get("enabled"):
            c.print(f"Auto top-up: {money.dollars(int(auto.get('amountMicroCents') or 0))} when the balance falls "
                    f"below {money.dollars(int(auto.get('thresholdMicroCents') or 0))} "
                    f"({data.get('autoTopupsToday')} of {data.get('autoTopupPerDay')} today).")
        elif data.get("hasPaymentMethod"):
            c.print("Auto top-up is off: `svc ai autotopup on --threshold 2 --amount 5` turns it on.")
        else:
            c.print("No payment method is stored: `svc ai topup 5` buys credit (and stores one for auto top-up).")
    return render


@app.command("credit")
def credit(ctx: typer.Context, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """The org's AI credit: balance, stored payment method, auto top-up."""
    with Api.for_context(ctx) as api:
        slug = resolve_org(api, org)
        data = api.get(_credit_path(slug) + "/credit")
    output.emit(as_json, data, _render_credit(slug, data))


@app.command("ledger")
def ledger(ctx: typer.Context, org: OrgOption = None,
           limit: Annotated[int, typer.Option(min=1, max=200, help="Rows a page.")] = 50,
           before: Annotated[int | None, typer.Option(min=1, metavar="LEDGER_ID",
                                                      help="Rows before this ledger id (the next page).")] = None,
           as_json: JsonFlag = False) -> None:
    """The org's ledger, newest first: every call, top-up and adjustment (the record the balance sums)."""
    with Api.for_context(ctx) as api:
        slug = resolve_org(api, org)
        params: dict[str, Any] = {"limit": limit} | ({"before": before} if before else {})
        data = api.get(_credit_path(slug) + "/ledger", params=params)
    rows = [[e.get("ledger_id"), output.when(e.get("createdAt")), e.get("kind"),
             money.dollars(int(e.get("microCents") or 0)), e.get("project"), e.get("model")]
            for e in data.get("entries") or []]

    def render(c: Console) -> None:
        c.print(output.table(["ID", "WHEN", "KIND", "AMOUNT", "PROJECT", "MODEL"], rows,
                             empty=f"{slug}'s ledger is empty.", optional=["MODEL"]))
        if data.get("nextBefore"):
            c.print(f"More: svc ai ledger --before {data['nextBefore']}", style="dim")

    output.emit(as_json, data, render)


@app.command("topup")
def topup(ctx: typer.Context,
          amount: Annotated[str, typer.Argument(metavar="AMOUNT", help="Dollars, a tier: 5, 20 or 50 (unless "
                                                                        "the operator set others).")],
          org: OrgOption = None,
          no_browser: Annotated[bool, typer.Option("--no-browser", help="Print the URL only.")] = False,
          no_wait: Annotated[bool, typer.Option("--no-wait", help="Do not wait for the payment.")] = False,
          timeout: Annotated[float, typer.Option(min=1, metavar="SECONDS", help="Seconds to wait.")] = 900.0,
          as_json: JsonFlag = False) -> None:
    """Buy AI credit (admins): open the provider's checkout, then wait until the payment raised the balance."""
    micro_cents = _amount(amount, "AMOUNT")
    with Api.for_context(ctx) as api:
        slug = resolve_org(api, org)
        before = int(api.get(_credit_path(slug) + "/credit").get("balanceMicroCents") or 0)
        public = str(api.get("/v1/config", auth=False).get("publicUrl") or "").rstrip("/")
        url = str(api.post(_credit_path(slug) + "/credit/checkout",
                           {"microCents": micro_cents, "returnTo": f"{public}/orgs/{seg(slug)}/ai"})["url"])
        if not as_json:
            output.note(f"Pay for {money.dollars(micro_cents)} of {slug}'s AI credit at: {url}")
        if not no_browser:
            _open_browser(url)
        if no_wait:
            output.emit(as_json, {"url": url, "balanceMicroCents": before}, lambda c: None)
            return
        def risen() -> dict[str, Any] | None:
            credit = api.get(_credit_path(slug) + "/credit")
            return credit if int(credit.get("balanceMicroCents") or 0) >= before + micro_cents else None

        data = output.wait_for("Waiting for the payment (the provider tells svc; Ctrl+C to stop waiting)...", risen,
                               timeout=timeout, every=POLL_SECONDS,
                               late=f"the balance has not risen after {timeout:g}s: once the payment goes through, "
                                    "`svc ai credit` shows it")
    output.emit(as_json, data | {"url": url}, _render_credit(slug, data))


@app.command("autotopup")
def autotopup(ctx: typer.Context,
              state: Annotated[str, typer.Argument(metavar="on|off", help="on: consent to charges of the stored "
                                                                          "payment method; off: withdraw it.")],
              threshold: Annotated[str | None, typer.Option(
                  help="Top up when the balance falls below this (dollars: 2).")] = None,
              amount: Annotated[str | None, typer.Option(help="What each top-up buys, a tier (dollars: 5).")] = None,
              org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Turn automatic top-ups on (admins; after a first purchase stored a payment method) or off."""
    if state not in ("on", "off"):
        raise CliError("on or off", "bad_request")
    body: dict[str, Any] = {"enabled": state == "on"}
    if state == "on":
        if threshold is None or amount is None:
            raise CliError("--threshold and --amount: both, to turn auto top-up on", "bad_request")
        body |= {"thresholdMicroCents": _amount(threshold, "--threshold"),
                 "amountMicroCents": _amount(amount, "--amount")}
    with Api.for_context(ctx) as api:
        slug = resolve_org(api, org)
        api.put(_credit_path(slug) + "/autotopup", body)
        data = api.get(_credit_path(slug) + "/credit")
    output.emit(as_json, data, _render_credit(slug, data))
