"""`svc tokens create --project ... --read-only` and `svc tokens list`'s limits, against a real server."""

from __future__ import annotations

from tests.cli.conftest import Cli, uniq


def test_limited_tokens_create_list_and_use(cli: Cli) -> None:
    cli.login(uniq("lim"))
    org = uniq("lim")
    cli.ok("orgs", "create", org)
    cli.ok("projects", "create", "web", "--org", org)
    cli.ok("projects", "create", "api", "--org", org)

    both = cli.ok("tokens", "create", "ci", "--project", f"{org}/web", "--read-only", "--json").json()
    assert both["project"] == {"org": org, "name": "web"} and both["readOnly"] is True
    # NAME alone is a project of --org (its default: SVC_ORG, svc.json, the personal org).
    scoped = cli.ok("tokens", "create", "deploy", "-p", "web", "--org", org, "--json").json()
    assert scoped["project"] == {"org": org, "name": "web"} and scoped["readOnly"] is False
    reader = cli.ok("tokens", "create", "reader", "--read-only", "--json").json()
    assert reader["project"] is None and reader["readOnly"] is True
    # Without --project, SVC_PROJECT does not limit a token: a limit is asked for by name.
    plain = cli.ok("tokens", "create", "laptop", "--json", env=cli.env(SVC_PROJECT="web", SVC_ORG=org)).json()
    assert plain["project"] is None and plain["readOnly"] is False
    shown = cli.ok("tokens", "create", "said", "--project", f"{org}/api", "--read-only")
    assert f"limits: project {org}/api, read-only" in shown.out

    listed = cli.ok("tokens", "list", "--json").json()["tokens"]
    assert [(t["name"], t["project"], t["readOnly"]) for t in listed] == [
        ("ci", {"org": org, "name": "web"}, True), ("deploy", {"org": org, "name": "web"}, False),
        ("reader", None, True), ("laptop", None, False), ("said", {"org": org, "name": "api"}, True)]
    text = cli.ok("tokens", "list", env=cli.env(COLUMNS="220")).out
    assert "LIMITS" in text, text
    lines = {line.split()[1]: line for line in text.splitlines() if line.startswith("pat_")}
    assert f"project {org}/web, read-only" in lines["ci"]
    assert f"project {org}/web" in lines["deploy"] and "read-only" not in lines["deploy"]
    assert "read-only" in lines["reader"] and "project" not in lines["reader"]
    assert " - " in lines["laptop"]

    # Used as SVC_TOKEN: the read-only token reads its project, and changes nothing.
    as_both = cli.env(SVC_TOKEN=both["token"])
    assert cli.ok("projects", "show", "web", "--org", org, "--json", env=as_both).json()["name"] == "web"
    cli.fails("token_read_only", "secrets", "set", "API_KEY", "-p", "web", "--org", org, input="v", env=as_both)
    # The project-limited token changes its project, not another one.
    as_scoped = cli.env(SVC_TOKEN=scoped["token"])
    cli.ok("secrets", "set", "API_KEY", "-p", "web", "--org", org, input="v", env=as_scoped)
    cli.fails("token_project_limited", "secrets", "set", "API_KEY", "-p", "api", "--org", org, input="v",
              env=as_scoped)
    cli.fails("token_project_limited", "projects", "create", "more", "--org", org, env=as_scoped)


def test_refused_project_limits(cli: Cli) -> None:
    cli.login(uniq("lim"))
    org = uniq("lim")
    cli.ok("orgs", "create", org)
    cli.fails("not_found", "tokens", "create", "ci", "--project", f"{org}/nope")
    cli.fails("not_found", "tokens", "create", "ci", "--project", "no-such-org/web")
    for bad in (f"{org}/", "/web", f"{org}/web/x"):
        cli.fails("bad_request", "tokens", "create", "ci", "--project", bad)
    assert cli.ok("tokens", "list", "--json").json() == {"tokens": []}
