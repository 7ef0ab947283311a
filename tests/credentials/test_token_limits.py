"""Personal access tokens limited to one project and/or to reading (GitHub's fine-grained tokens are
the model): created and listed with their limits, and held to them by every route."""

from __future__ import annotations

from typing import Any

import httpx
from sqlalchemy import select, update

from svc.models import AccessToken, Project, Secret
from tests.support.api import Svc, User, assert_error
from tests.support.team import make_team

WEB = "/v1/orgs/acme/projects/web"
API = "/v1/orgs/acme/projects/api"


async def _token(user: User, **body: Any) -> dict[str, Any]:
    r = await user.client.post("/v1/me/tokens", json={"name": "ci", **body})
    assert r.status_code == 201, r.text
    return dict(r.json())


async def _secrets(svc: Svc) -> list[tuple[str, str]]:
    async with svc.ctx.db.transaction(write=False) as s:
        rows = (await s.execute(select(Project.name, Secret.name).join(Secret, Secret.project_id == Project.id)))
        return sorted((p, n) for p, n in rows.all())


async def _projects(svc: Svc) -> list[str]:
    async with svc.ctx.db.transaction(write=False) as s:
        return sorted((await s.scalars(select(Project.name))).all())


async def test_limited_tokens_are_created_and_listed_with_their_limits(svc: Svc) -> None:
    team = await make_team(svc, project="web")
    alice = team.alice
    plain = await _token(alice)
    assert plain["project"] is None and plain["readOnly"] is False
    both = await _token(alice, project={"org": "acme", "name": "web"}, readOnly=True)
    assert both["project"] == {"org": "acme", "name": "web"} and both["readOnly"] is True
    reader = await _token(alice, readOnly=True, project=None)
    assert reader["project"] is None and reader["readOnly"] is True
    scoped = await _token(alice, project={"org": "acme", "name": "web"}, readOnly=False)
    assert scoped["project"] == {"org": "acme", "name": "web"} and scoped["readOnly"] is False

    listed = (await alice.client.get("/v1/me/tokens")).json()["tokens"]
    assert [(t["id"], t["project"], t["readOnly"]) for t in listed] == [
        (plain["id"], None, False), (both["id"], {"org": "acme", "name": "web"}, True),
        (reader["id"], None, True), (scoped["id"], {"org": "acme", "name": "web"}, False)]
    assert listed[1] == {k: v for k, v in both.items() if k != "token"}
    # A limited token lists its user's tokens too (a read of /v1/me).
    assert len((await svc.client(both["token"]).get("/v1/me/tokens")).json()["tokens"]) == 4

    # The project is read through its id when listed: a renamed project shows its new name.
    async with svc.ctx.db.transaction() as s:
        await s.execute(update(Project).where(Project.name == "web").values(name="www"))
    listed = (await alice.client.get("/v1/me/tokens")).json()["tokens"]
    assert [t["project"] for t in listed] == [None, {"org": "acme", "name": "www"}, None,
                                              {"org": "acme", "name": "www"}]
    # ...and the token follows the project, not its old name.
    assert (await svc.client(scoped["token"]).get("/v1/orgs/acme/projects/www")).status_code == 200


async def test_a_read_only_token_reads_but_changes_nothing(svc: Svc) -> None:
    team = await make_team(svc, project="web")
    created = await _token(team.bob, readOnly=True)
    pat = svc.client(created["token"])
    # Reads: the project, its secrets, the org, the account.
    for path in (WEB, f"{WEB}/secrets", "/v1/orgs/acme/projects", "/v1/orgs/acme/members", "/v1/me", "/v1/orgs",
                 "/v1/me/tokens"):
        assert (await pat.get(path)).status_code == 200, path

    refused: list[httpx.Response] = [
        await pat.put(f"{WEB}/secrets/API_KEY", json={"value": "v"}),
        await pat.delete(f"{WEB}/secrets/API_KEY"),
        await pat.post(f"{WEB}/deployments", content=b"not a bundle", headers={"content-type": "application/gzip"}),
        await pat.post(f"{WEB}/rollback", json={}),
        await pat.post("/v1/orgs/acme/projects", json={"name": "api"}),
        await pat.post("/v1/orgs", json={"slug": "bobs-org"}),
        await pat.delete(f"/v1/me/tokens/{created['id']}"),
        # Refused before the body is looked at: a bad body is still 403.
        await pat.put(f"{WEB}/secrets/API_KEY", json={"nope": 1}),
    ]
    for r in refused:
        body = assert_error(r, 403, "token_read_only")
        assert body["message"].startswith("This token is read-only")

    # Nothing changed: no secret, no project, no org; the token is still active and still reads.
    assert await _secrets(svc) == []
    assert await _projects(svc) == ["web"]
    assert {o["slug"] for o in (await pat.get("/v1/orgs")).json()["orgs"]} == {team.bob.personal_org, "acme"}
    assert [t["revokedAt"] for t in (await team.bob.client.get("/v1/me/tokens")).json()["tokens"]] == [None]
    assert (await pat.get(WEB)).status_code == 200
    # Its user, with a session, changes what the token may not.
    assert (await team.bob.client.put(f"{WEB}/secrets/API_KEY", json={"value": "v"})).status_code == 200


async def test_a_project_limited_token_acts_on_its_project_only(svc: Svc) -> None:
    team = await make_team(svc, project="web", other_project="app")
    alice = team.alice
    assert (await alice.client.post("/v1/orgs/acme/projects", json={"name": "api"})).status_code == 201
    mine = f"/v1/orgs/{alice.personal_org}/projects"
    assert (await alice.client.post(mine, json={"name": "site"})).status_code == 201
    pat = svc.client((await _token(alice, project={"org": "acme", "name": "web"}))["token"])

    # Its project: read and write.
    assert (await pat.get(WEB)).status_code == 200
    r = await pat.put(f"{WEB}/secrets/API_KEY", json={"value": "v"})
    assert r.status_code == 200, r.text
    assert [s["name"] for s in (await pat.get(f"{WEB}/secrets")).json()["secrets"]] == ["API_KEY"]
    # Its org: reads (so a tool can find its project), no changes.
    listed = await pat.get("/v1/orgs/acme/projects")
    assert listed.status_code == 200 and {p["name"] for p in listed.json()["projects"]} == {"web", "api"}
    assert (await pat.get("/v1/orgs/acme/members")).status_code == 200
    assert (await pat.get("/v1/me")).status_code == 200 and (await pat.get("/v1/orgs")).status_code == 200

    limited: list[httpx.Response] = [
        # Another project of its org, even one that does not exist.
        await pat.get(API), await pat.get(f"{API}/secrets"),
        await pat.put(f"{API}/secrets/API_KEY", json={"value": "v"}),
        await pat.get("/v1/orgs/acme/projects/nope"),
        # The org's changes.
        await pat.post("/v1/orgs/acme/projects", json={"name": "more"}),
        await pat.post("/v1/orgs/acme/members", json={"provider": "dev", "subject": "eve", "role": "viewer"}),
        await pat.patch("/v1/orgs/acme", json={"name": "Acme"}),
        # Another org of alice's, reads and changes; an org she is not in; one that does not exist.
        await pat.get(mine), await pat.get(f"{mine}/site"),
        await pat.put(f"{mine}/site/secrets/API_KEY", json={"value": "v"}),
        await pat.post(mine, json={"name": "more"}),
        await pat.get("/v1/orgs/other/projects"), await pat.get("/v1/orgs/other/projects/app"),
        await pat.get("/v1/orgs/no-such-org/projects"),
        # Changes outside any org.
        await pat.post("/v1/orgs", json={"slug": "alices-new"}),
    ]
    for r in limited:
        body = assert_error(r, 403, "token_project_limited")
        assert "limited to one project" in body["message"]
    assert await _secrets(svc) == [("web", "API_KEY")]
    assert await _projects(svc) == ["api", "app", "site", "web"]

    # Both limits: the project, read-only.
    reader = svc.client((await _token(alice, project={"org": "acme", "name": "web"}, readOnly=True))["token"])
    assert (await reader.get(f"{WEB}/secrets")).status_code == 200
    assert_error(await reader.put(f"{WEB}/secrets/OTHER", json={"value": "v"}), 403, "token_read_only")
    assert_error(await reader.get(API), 403, "token_project_limited")
    # A limit never adds to its user's role: a viewer's token limited to the project still cannot write.
    vic = svc.client((await _token(team.vic, project={"org": "acme", "name": "web"}))["token"])
    assert (await vic.get(WEB)).status_code == 200
    assert_error(await vic.put(f"{WEB}/secrets/OTHER", json={"value": "v"}), 403, "forbidden")
    assert await _secrets(svc) == [("web", "API_KEY")]


async def test_the_project_must_exist_in_an_org_of_the_caller(svc: Svc) -> None:
    team = await make_team(svc, project="web", other_project="app")
    # eve is not in acme: its project is not shown to exist, whatever it is called.
    for project in ({"org": "acme", "name": "web"}, {"org": "acme", "name": "nope"}):
        assert_error(await team.eve.client.post("/v1/me/tokens", json={"name": "t", "project": project}),
                     404, "not_found")
    # alice is in acme but not in other; nor is there an org "nowhere" or a project acme/nope.
    for project in ({"org": "other", "name": "app"}, {"org": "nowhere", "name": "web"},
                    {"org": "acme", "name": "nope"}):
        assert_error(await team.alice.client.post("/v1/me/tokens", json={"name": "t", "project": project}),
                     404, "not_found")
    # Any role will do: a viewer may limit a token to the project.
    assert (await team.vic.client.post("/v1/me/tokens", json={"name": "t", "project": {
        "org": "acme", "name": "web"}})).status_code == 201
    for user in (team.alice, team.eve):
        assert (await user.client.get("/v1/me/tokens")).json() == {"tokens": []}


async def test_bad_limits_are_400_and_create_nothing(svc: Svc) -> None:
    team = await make_team(svc, project="web")
    bodies: list[object] = [
        {"name": "a", "readOnly": "true"}, {"name": "a", "readOnly": 1}, {"name": "a", "readOnly": None},
        {"name": "a", "readOnly": "yes"}, {"name": "a", "read_only": True},
        {"name": "a", "project": "acme/web"}, {"name": "a", "project": ["acme", "web"]},
        {"name": "a", "project": {"org": "acme"}}, {"name": "a", "project": {"name": "web"}},
        {"name": "a", "project": {"org": "acme", "name": "web", "extra": 1}},
        {"name": "a", "project": {"org": "ACME", "name": "web"}}, {"name": "a", "project": {"org": "acme", "name": ""}},
        {"name": "a", "project": {"org": "acme", "name": "x" * 33}},
        {"name": "a", "project": {"org": 5, "name": "web"}},
        {"name": "a", "org": "acme", "project": "web"},
    ]
    for body in bodies:
        err = assert_error(await team.alice.client.post("/v1/me/tokens", json=body), 400, "bad_request")
        assert err["details"]["errors"], body
    assert (await team.alice.client.get("/v1/me/tokens")).json() == {"tokens": []}
    async with svc.ctx.db.transaction(write=False) as s:
        assert (await s.scalars(select(AccessToken))).all() == []


async def test_a_limited_token_cannot_mint_a_wider_one(svc: Svc) -> None:
    team = await make_team(svc, project="web")
    for body, status, code in (({"readOnly": True}, 403, "token_read_only"),
                               ({"project": {"org": "acme", "name": "web"}}, 403, "token_project_limited"),
                               ({}, 401, "session_required")):
        pat = svc.client((await _token(team.alice, **body))["token"])
        assert_error(await pat.post("/v1/me/tokens", json={"name": "wider"}), status, code)
        assert_error(await pat.post("/v1/me/ssh-keys", json={"name": "k", "publicKey": "ssh-ed25519 AAAA"}),
                     status, code)
    assert len((await team.alice.client.get("/v1/me/tokens")).json()["tokens"]) == 3
