"""`svc billing status|upgrade|portal|cancel|resume`: an org's plan and its subscription.

The plan changes only when the billing provider's webhook arrives: `upgrade` opens the provider's
checkout in the browser, then waits (with a spinner) until the org is pro."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from svc.cli import output
from svc.cli.client import Api, seg
from svc.cli.commands.login import _open_browser
from svc.cli.commands.projects import OrgOption, resolve_org
from svc.cli.output import JsonFlag

if TYPE_CHECKING:
    from rich.console import Console

HELP = "An org's plan: status, upgrade to pro, the billing portal, cancel or resume."  # its line in `svc --help`
app = typer.Typer(help="An org's plan and subscription: status, upgrade, portal, cancel, resume.",
                  no_args_is_help=True)

POLL_SECONDS = 1.0
NoBrowser = Annotated[bool, typer.Option("--no-browser", help="Print the URL only; do not open a browser.")]
NoWait = Annotated[bool, typer.Option("--no-wait", help="Do not wait for the plan to change.")]
TimeoutOption = Annotated[float, typer.Option(min=1, metavar="SECONDS", help="Seconds to wait for the payment.")]


def _path(org: str) -> str:
    return f"/v1/orgs/{seg(org)}/billing"


def _limits(status: dict[str, Any]) -> str:
    limits = (status.get("limits") or {}).get(status.get("plan") or "free") or {}
    return (f"{limits.get('projects')} projects, {int(limits.get('storageBytes') or 0) // 1024**3} GiB of storage, "
            f"{limits.get('mailPerHour')} mails an hour")


def _render(org: str, status: dict[str, Any]) -> Any:
    def render(c: Console) -> None:
        if not status.get("enabled"):
            c.print(f"{org} is on the {status.get('plan')} plan ({_limits(status)}). Billing is not configured on "
                    "this svc: its operator sets plans (svc admin plan).")
            return
        line = f"{org} is on the {status.get('plan')} plan ({_limits(status)})"
        if status.get("plan") == "pro":
            end = output.when(status.get("periodEnd")) or "?"
            line += (f"; it ends on {end[:10]} (cancelled at the end of the period: `svc billing resume` keeps it)"
                     if status.get("cancelAtPeriodEnd") else f"; it renews on {end[:10]}")
            line += f"; the subscription is {status.get('status')}"
        # As words, not markup (rich would take "[sandbox]" for a style and print " .").
        c.print(line + (" [sandbox]" if status.get("sandbox") else "") + ".", markup=False)
    return render


@app.command("status")
def status(ctx: typer.Context, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """The org's plan, its limits, and the subscription's state (pro)."""
    with Api.for_context(ctx) as api:
        slug = resolve_org(api, org)
        data = api.get(_path(slug))
    output.emit(as_json, data, _render(slug, data))


def _return_url(api: Api, slug: str) -> str:
    public = str(api.get("/v1/config", auth=False).get("publicUrl") or "").rstrip("/")
    return f"{public}/orgs/{seg(slug)}/billing"


@app.command("upgrade")
def upgrade(ctx: typer.Context, org: OrgOption = None, no_browser: NoBrowser = False, no_wait: NoWait = False,
            timeout: TimeoutOption = 900.0, as_json: JsonFlag = False) -> None:
    """Open the provider's checkout for the pro plan (admins); wait until the payment's webhook has
    made the org pro."""
    with Api.for_context(ctx) as api:
        slug = resolve_org(api, org)
        url = str(api.post(_path(slug) + "/checkout", {"returnTo": _return_url(api, slug)})["url"])
        if not as_json:
            output.note(f"Pay for {slug}'s pro plan at: {url}")
        if not no_browser:
            _open_browser(url)
        if no_wait:
            output.emit(as_json, {"url": url, "plan": "free"}, lambda c: None)
            return
        def pro() -> dict[str, Any] | None:
            status = api.get(_path(slug))
            return status if status.get("plan") == "pro" else None

        data = output.wait_for("Waiting for the payment (the provider tells svc; Ctrl+C to stop waiting)...", pro,
                               timeout=timeout, every=POLL_SECONDS,
                               late=f"{slug} is not pro after {timeout:g}s: once the payment goes through, "
                                    "`svc billing status` shows it")
    output.emit(as_json, data | {"url": url}, _render(slug, data))


@app.command("portal")
def portal(ctx: typer.Context, org: OrgOption = None, no_browser: NoBrowser = False, as_json: JsonFlag = False) -> None:
    """Open the provider's customer portal (invoices, payment method, cancel): a one-time link (admins)."""
    with Api.for_context(ctx) as api:
        slug = resolve_org(api, org)
        url = str(api.post(_path(slug) + "/portal", {"returnTo": _return_url(api, slug)})["url"])
    if not no_browser and not as_json:
        _open_browser(url)
    output.emit(as_json, {"url": url}, lambda c: c.print(f"The billing portal of {slug} (one-time link): {url}"))


def _cancel(ctx: typer.Context, org: str | None, cancel: bool, as_json: bool) -> None:
    with Api.for_context(ctx) as api:
        slug = resolve_org(api, org)
        data = api.post(_path(slug) + "/cancel", {"cancel": cancel})
    output.emit(as_json, data, _render(slug, data))


@app.command("cancel")
def cancel(ctx: typer.Context, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Cancel the pro plan at the end of the period (admins): it stays pro until then."""
    _cancel(ctx, org, True, as_json)


@app.command("resume")
def resume(ctx: typer.Context, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Keep the pro plan after a cancellation was scheduled (admins)."""
    _cancel(ctx, org, False, as_json)
