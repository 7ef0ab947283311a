"""`svc auth status|grant|revoke|set|provider set|provider remove`: sign-in for a project's own end
users (served by svc on the project's hosts at /__svc/auth/, its users in the project's database).

(`svc login`, `logout` and `whoami`, svc's own sign-in, are commands/login.py.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import urlsplit

import typer

from svc.cli import output
from svc.cli.client import Api, CliError, seg
from svc.cli.commands.projects import OrgOption, ProjectOption, project_path, target
from svc.cli.commands.secrets import read_value
from svc.cli.output import JsonFlag

if TYPE_CHECKING:
    from rich.console import Console

HELP = "End-user sign-in for a project (GitHub, Google, Microsoft): grant, providers, settings."
app = typer.Typer(help="Sign-in for a project's own end users, served by svc on the project's hosts at "
                       "/__svc/auth/ (GitHub, Google, Microsoft; the users kept in the project's database).",
                  no_args_is_help=True)
provider_app = typer.Typer(help="The project's OAuth apps at the providers: set (or rotate) and remove.",
                           no_args_is_help=True)
app.add_typer(provider_app, name="provider")

PROVIDERS = ("github", "google", "microsoft")
YesOption = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation (scripts; --json needs it).")]
ProviderArg = Annotated[str, typer.Argument(metavar="PROVIDER", help="github, google or microsoft.")]


def _base(slug: str, proj: str) -> str:
    return f"{project_path(slug, proj)}/auth"


def callback_urls(origin: str, hosts: list[str], provider: str) -> list[str]:
    """The callback address to register at the provider for each host, in the scheme and port the
    project's own address has (https://<host>/__svc/auth/callback/<provider>; http under make run)."""
    parts = urlsplit(origin)
    port = f":{parts.port}" if parts.port else ""
    return [f"{parts.scheme or 'https'}://{host}{port}/__svc/auth/callback/{provider}" for host in hosts]


def _origin(api: Api, slug: str, proj: str) -> str:
    return str(api.get(project_path(slug, proj)).get("url") or "https://")


def _render_status(proj: str, data: dict[str, Any], origin: str) -> Callable[[Console], None]:
    def render(c: Console) -> None:
        settings = data.get("settings") or {}
        providers = {p.get("name"): p.get("clientId") for p in data.get("providers") or []}
        if not data.get("granted"):
            c.print(f"{proj} does not serve sign-in: `svc auth grant --project {proj}` does (it needs the "
                    "project's database).", soft_wrap=True)
        elif data.get("configured"):
            c.print(f"{proj} serves sign-in at /__svc/auth/ on its hosts, with {', '.join(sorted(providers))}.",
                    soft_wrap=True)
        else:
            c.print(f"{proj} serves /__svc/auth/ on its hosts, but no provider is set: `svc auth provider set "
                    f"github --client-id ID --project {proj}` sets one.", soft_wrap=True)
        rows = []
        for name in PROVIDERS:
            for url in callback_urls(origin, list(data.get("hosts") or []), name):
                rows.append([name, providers.get(name) or "-", url])
        c.print(output.table(["PROVIDER", "CLIENT ID", "CALLBACK TO REGISTER"], rows,
                             shrink={"CALLBACK TO REGISTER": 20}, empty="The project has no host."))
        c.print(f"Sessions last {settings.get('sessionDays')} days. Brand: {settings.get('brandName') or proj}"
                f"{', colour ' + settings['brandColor'] if settings.get('brandColor') else ''}"
                f"{', logo ' + settings['logoUrl'] if settings.get('logoUrl') else ''}.", soft_wrap=True)
    return render


def _status(ctx: typer.Context, project: str | None, org: str | None, as_json: bool, method: str,
            body: Any = None, path: str = "") -> None:
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        data = api.request(method, _base(slug, proj) + path, body=body)
        origin = "" if as_json else _origin(api, slug, proj)
    output.emit(as_json, data, _render_status(proj, data, origin))


@app.command("status")
def status(ctx: typer.Context, project: ProjectOption = None, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Whether the project serves sign-in, its providers, the callbacks to register, its settings."""
    _status(ctx, project, org, as_json, "GET")


@app.command("grant")
def grant(ctx: typer.Context, project: ProjectOption = None, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Serve sign-in on the project's hosts (members; the project needs its database). Safe to run again."""
    _status(ctx, project, org, as_json, "POST")


@app.command("revoke")
def revoke(ctx: typer.Context, project: ProjectOption = None, org: OrgOption = None, yes: YesOption = False,
           as_json: JsonFlag = False) -> None:
    """Stop the sign-in (admins): /__svc/auth/ goes to the worker; end users, providers, settings are kept."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        output.confirm(yes, as_json, f"Stop the sign-in of {proj}? /__svc/auth/ goes to its worker again (the end "
                       "users are kept).", "revoke", "Nothing was revoked")
        api.delete(_base(slug, proj))
    output.emit_line(as_json, {"project": proj, "granted": False},
                     f"{proj} no longer serves sign-in (its end users, providers and settings are kept).")


@app.command("set")
def set_settings(
    ctx: typer.Context,
    session_days: Annotated[int | None, typer.Option("--session-days", metavar="DAYS",
                                                     help="How long end users stay signed in (1-365).")] = None,
    brand_name: Annotated[str | None, typer.Option("--brand-name", help="The sign-in page's name (\"\" clears: "
                                                                        "the project's name).")] = None,
    brand_color: Annotated[str | None, typer.Option("--brand-color", metavar="#RRGGBB",
                                                    help="The sign-in page's accent colour (\"\" clears).")] = None,
    logo_url: Annotated[str | None, typer.Option("--logo-url", metavar="URL",
                                                 help="An image the sign-in page shows (\"\" clears).")] = None,
    project: ProjectOption = None, org: OrgOption = None, as_json: JsonFlag = False,
) -> None:
    """Change the sign-in's settings (members): only the options given change."""
    body: dict[str, Any] = {}
    if session_days is not None:
        body["sessionDays"] = session_days
    for key, value in (("brandName", brand_name), ("brandColor", brand_color), ("logoUrl", logo_url)):
        if value is not None:
            body[key] = value or None
    if not body:
        raise CliError("Nothing to change: give --session-days, --brand-name, --brand-color or --logo-url",
                       "nothing_to_change")
    _status(ctx, project, org, as_json, "PATCH", body)


@provider_app.command("set")
def provider_set(
    ctx: typer.Context, provider: ProviderArg,
    client_id: Annotated[str, typer.Option("--client-id", metavar="ID",
                                           help="The client id of the OAuth app the project registered there.")],
    project: ProjectOption = None, org: OrgOption = None, as_json: JsonFlag = False,
) -> None:
    """Set or rotate the project's OAuth app at PROVIDER (admins). The client secret is read from standard
    input, or asked for without echo: never on the command line; sealed by svc, never shown again."""
    if provider not in PROVIDERS:  # said before the secret is asked for
        raise CliError(f"There is no provider {provider!r}: the providers are {', '.join(PROVIDERS)}",
                       "invalid_provider")
    secret = read_value("client secret")
    _status(ctx, project, org, as_json, "PUT", {"clientId": client_id, "clientSecret": secret},
            f"/providers/{seg(provider)}")


@provider_app.command("remove")
def provider_remove(ctx: typer.Context, provider: ProviderArg, project: ProjectOption = None,
                    org: OrgOption = None, yes: YesOption = False, as_json: JsonFlag = False) -> None:
    """Remove the project's OAuth app at PROVIDER (admins): its identities go, the end users stay."""
    with Api.for_context(ctx) as api:
        slug, proj = target(api, org, project)
        output.confirm(yes, as_json, f"Remove {provider} from {proj}'s sign-in? Its identities are deleted (the end "
                       "users are kept).", "remove", "Nothing was removed")
        api.delete(f"{_base(slug, proj)}/providers/{seg(provider)}")
    output.emit_line(as_json, {"project": proj, "provider": provider, "removed": True},
                     f"{provider} is removed from {proj}'s sign-in (its end users are kept).")
