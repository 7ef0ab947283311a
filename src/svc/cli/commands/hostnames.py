"""`svc hostnames list|add|verify|remove`: a project's hostnames (the default one and custom ones).

A custom hostname is served once its owner proves control of its DNS: `add` prints the record to
create; `--wait` follows the hostname until it is active (the server checks pending names every
minute, and `verify` checks one now)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated, Any

import typer

from svc.cli import output
from svc.cli.client import Api, ApiError, CliError, seg
from svc.cli.commands.projects import OrgOption, ProjectOption, project_path, target
from svc.cli.output import JsonFlag

if TYPE_CHECKING:
    from rich.console import Console

HELP = "A project's hostnames: add custom ones, verify, remove."  # its line in `svc --help`
app = typer.Typer(help="A project's hostnames: list, add (with the DNS record to create), verify, remove.",
                  no_args_is_help=True)

POLL_SECONDS = 1.0
# While waiting, the CLI asks the server to check again this often (its own cycle runs every minute).
RECHECK_SECONDS = 5.0
ACTIVE = "active"

HostArg = Annotated[str, typer.Argument(metavar="HOST", help="The host name, such as www.example.com.")]
WaitFlag = Annotated[bool, typer.Option("--wait", help="Follow the hostname until it is active, with a spinner.")]
TimeoutOption = Annotated[float, typer.Option(min=1, metavar="SECONDS", help="Seconds to wait with --wait.")]


def _path(org: str, project: str, host: str | None = None) -> str:
    base = f"{project_path(org, project)}/hostnames"
    return base if host is None else f"{base}/{seg(host)}"


def records(hostname: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(type, name, value) of the records that prove ownership of a custom hostname (any one will do)."""
    found: list[tuple[str, str, str]] = []
    verification = hostname.get("verification")
    if isinstance(verification, dict):
        found.append((str(verification.get("type")), str(verification.get("name")),
                      f'"{verification.get("value")}"'))
    if hostname.get("cnameTarget"):
        found.append(("CNAME", str(hostname.get("host")), str(hostname.get("cnameTarget"))))
    return found


def _print_records(c: Console, hostname: dict[str, Any]) -> None:
    """The records to create at the host's DNS provider, as a table to copy from."""
    c.print(f"To connect {hostname.get('host')}, create one of these records at its DNS provider:")
    c.print(output.table(["TYPE", "NAME", "VALUE"], records(hostname)))


def own_zone(api: Api, org: str, host: str) -> dict[str, Any] | None:
    """The org's zone on svc that holds `host` (the closest), or None (none does, or DNS is off)."""
    try:
        zones = api.get(f"/v1/orgs/{seg(org)}/dns/zones").get("zones") or []
    except ApiError:  # 503 without DNS hosting, 403 ...: then no zone of svc's holds it
        return None
    absolute = f"{host.rstrip('.')}."
    holding = [z for z in zones if isinstance(z, dict) and z.get("name")
               and (absolute == z["name"] or absolute.endswith("." + str(z["name"])))]
    return max(holding, key=lambda z: len(str(z["name"])), default=None)


def _in_own_zone(c: Console, hostname: dict[str, Any], zone: dict[str, Any]) -> None:
    """What happens to a name in a zone of the org's: svc makes the record, the name turns active."""
    host, name = str(hostname.get("host")), str(zone.get("name") or "").rstrip(".")
    if host == name:  # the apex: proven by the zone; no CNAME can live beside its SOA and NS
        made = "svc proves it by the zone itself (point it at the edge with A/AAAA records of your own)"
    else:
        made = (f"svc creates its record there itself (a CNAME to {hostname.get('cnameTarget')}, unless the name "
                "holds records of yours)")
    when = ("within seconds" if zone.get("delegated") else
            f"once the public DNS delegates {name} to svc's nameservers (`svc dns zones list` shows it)")
    c.print(f"{host} is in {name}, a zone of this org on svc: {made}. Nothing to create at a DNS provider; "
            f"it turns active by itself {when}.", soft_wrap=True)


def _https(certificate: dict[str, Any] | None) -> str:
    """The certificate column: its status and expiry, or why it failed."""
    if not certificate:
        return "-"
    status = str(certificate.get("status"))
    if status == "active":
        return f"until {(output.when(certificate.get('notAfter')) or '?')[:10]}"
    if status == "failed":
        return f"failed: {certificate.get('lastError') or '?'}"
    return status


def _status_line(hostname: dict[str, Any]) -> str:
    if hostname.get("status") == ACTIVE:
        return f"{hostname.get('host')} is active: the edge serves the project there."
    error = hostname.get("lastError")
    seen = f" Last check: {error}." if error else " Not checked yet."
    return f"{hostname.get('host')} is pending (ownership not proven yet).{seen}"


def wait_active(api: Api, org: str, project: str, host: str, *, timeout: float) -> dict[str, Any]:
    """Poll the project's hostnames about once a second, with a spinner showing the last check,
    until `host` is active; every RECHECK_SECONDS, ask the server to check it now."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn  # only when needed

    deadline = time.monotonic() + timeout
    recheck = time.monotonic() + RECHECK_SECONDS
    columns = (SpinnerColumn(), TextColumn("{task.description}", markup=False),
               TextColumn("{task.fields[seen]}", markup=False, style="dim"), TimeElapsedColumn())
    with Progress(*columns, console=output.err(), transient=True) as progress:
        task = progress.add_task(f"Waiting for {host} to be active", total=None, seen="")
        while True:
            listed = api.get(_path(org, project)).get("hostnames") or []
            found = next((h for h in listed if h.get("host") == host), None)
            if found is None:
                raise CliError(f"{host} is no longer a hostname of {project}", "not_found")
            if found.get("status") != ACTIVE and time.monotonic() >= recheck:
                found = api.post(f"{_path(org, project, host)}/verify")
                recheck = time.monotonic() + RECHECK_SECONDS
            if found.get("status") == ACTIVE:
                progress.update(task, total=1, completed=1)
                return dict(found)
            seen = str(found.get("lastError") or "not checked yet")
            progress.update(task, seen=seen)
            if time.monotonic() >= deadline:
                raise CliError(f"{host} is still pending after {timeout:g} s: {seen}", "timeout",
                               hint="create one of the records `svc hostnames list` shows; the server keeps "
                                    "checking every minute")
            time.sleep(POLL_SECONDS)


@app.command("list")
def list_hostnames(ctx: typer.Context, project: ProjectOption = None, org: OrgOption = None,
                   as_json: JsonFlag = False) -> None:
    """List a project's hostnames, with the record each pending one still needs."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        data = api.get(_path(slug, proj))
    hostnames = [h for h in data.get("hostnames") or [] if isinstance(h, dict)]

    def render(c: Console) -> None:
        c.print(output.table(["HOST", "KIND", "STATUS", "CHECKED", "LAST CHECK SAW", "HTTPS"],
                             ([h.get("host"), h.get("kind"), h.get("status"), output.when(h.get("lastCheckedAt")),
                               h.get("lastError"), _https(h.get("certificate"))] for h in hostnames),
                             empty=f"No hostnames in {proj}.", shrink={"LAST CHECK SAW": 24, "HTTPS": 24}))
        for h in hostnames:
            if h.get("kind") == "custom" and h.get("status") != ACTIVE:
                c.print()
                _print_records(c, h)

    output.emit(as_json, data, render)


@app.command("add")
def add(ctx: typer.Context, name: HostArg, project: ProjectOption = None, org: OrgOption = None,
        wait: WaitFlag = False, timeout: TimeoutOption = 300, as_json: JsonFlag = False) -> None:
    """Add a custom hostname (members) and print the DNS record that proves you own it.

    The same name again prints the same record. With --wait, follow it until it is active."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        added: dict[str, Any] = api.post(_path(slug, proj), {"name": name})
        host = str(added.get("host"))
        if not as_json:
            c = output.out()
            c.print(f"Added {host} to {proj}." if added.get("status") != ACTIVE else _status_line(added))
            if added.get("status") != ACTIVE:
                zone = own_zone(api, slug, host)
                if zone is not None:
                    _in_own_zone(c, added, zone)
                else:
                    _print_records(c, added)
        if wait and added.get("status") != ACTIVE:
            added = wait_active(api, slug, proj, host, timeout=timeout)
            if not as_json:
                output.say(_status_line(added))
    if as_json:
        output.print_json(added)


@app.command("verify")
def verify(ctx: typer.Context, host: HostArg, project: ProjectOption = None, org: OrgOption = None,
           wait: WaitFlag = False, timeout: TimeoutOption = 300, as_json: JsonFlag = False) -> None:
    """Check a hostname's DNS now (members); with --wait, follow it until it is active."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        checked: dict[str, Any] = api.post(f"{_path(slug, proj, host)}/verify")
        if wait and checked.get("status") != ACTIVE:
            if not as_json:
                output.note(_status_line(checked))
            checked = wait_active(api, slug, proj, str(checked.get("host")), timeout=timeout)
    if as_json:
        output.print_json(checked)
        return
    output.say(_status_line(checked))
    if checked.get("status") != ACTIVE:
        _print_records(output.out(), checked)


@app.command("remove")
def remove(ctx: typer.Context, host: HostArg, project: ProjectOption = None, org: OrgOption = None,
           as_json: JsonFlag = False) -> None:
    """Remove a custom hostname (members): the edge stops serving it, and the record svc made for it
    in this org's zone goes too. The default hostname stays."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        api.delete(_path(slug, proj, host))
    output.emit_line(as_json, {"removed": True, "org": slug, "project": proj, "host": host},
                     "Removed ", (host, "bold"), f" from {proj}.")
