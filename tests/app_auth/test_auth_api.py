"""The spec's "End-user auth of a project", the control side, end to end over HTTP against a real
project database: grant (409 database_required without one; idempotent; the svc_auth schema made
in the project's own database, kept by a revoke), settings patched partially (404 not_granted vs
not_found, 400 for each field out of bounds), providers set and removed (400 invalid_provider, the
secret sealed and never returned nor audited), status with every host of the project."""

from __future__ import annotations

import json
from typing import Any

import pytest
from cryptography.exceptions import InvalidTag
from sqlalchemy import select

from svc.domains.app_auth import jobs, schema, service
from svc.models import AuditEvent, AuthGrant, AuthProvider
from svc.uow import Tx, unit_of_work
from tests.support.api import Svc, assert_error
from tests.support.projectdb import as_project
from tests.support.team import Team, make_team

A = "/v1/orgs/acme/projects/web/auth"
DB = "/v1/orgs/acme/projects/web/database"
DEFAULTS = {"sessionDays": 30, "brandName": None, "brandColor": None, "logoUrl": None}
SECRET = "gh-secret-never-shown-0123456789"


async def _audit(svc: Svc) -> list[tuple[str, str, dict[str, Any]]]:
    async with svc.ctx.db.transaction(write=False) as s:
        rows = (await s.execute(select(AuditEvent.action, AuditEvent.actor_subject, AuditEvent.data)
                                .where(AuditEvent.action.startswith("auth.")).order_by(AuditEvent.at))).all()
    return [(str(r[0]), str(r[1]), dict(r[2])) for r in rows]


async def _granted_team(svc: Svc) -> tuple[Team, dict[str, Any]]:
    team = await make_team(svc, project="web", other_project="site")
    creds = (await team.bob.client.post(DB)).json()
    granted = await team.bob.client.post(A)
    assert granted.status_code == 200, granted.text
    return team, creds


async def _tables(creds: dict[str, Any]) -> list[str]:
    rows = await as_project(creds, "SELECT table_name FROM information_schema.tables "
                                   "WHERE table_schema = 'svc_auth' ORDER BY table_name")
    return [r[0] for r in rows]


async def test_grant_needs_a_database_and_makes_the_schema_there(db_svc: Svc) -> None:
    team = await make_team(db_svc, project="web", other_project="site")
    host = (await team.vic.client.get("/v1/orgs/acme/projects/web")).json()["hostname"]
    before = (await team.vic.client.get(A)).json()
    assert before == {"granted": False, "configured": False, "providers": [], "hosts": [host], "settings": DEFAULTS}
    assert_error(await team.vic.client.post(A), 403, "forbidden")
    refused = assert_error(await team.bob.client.post(A), 409, "database_required")
    assert "database" in refused["message"]
    assert (await team.vic.client.get(A)).json() == before  # nothing changed
    assert await _audit(db_svc) == []
    assert_error(await team.eve.client.get(A), 404, "not_found")  # another org's project: as if absent
    assert_error(await team.eve.client.post("/v1/orgs/acme/projects/nope/auth"), 404, "not_found")

    creds = (await team.bob.client.post(DB)).json()
    granted = await team.bob.client.post(A)
    assert granted.status_code == 200, granted.text
    assert granted.json() == before | {"granted": True}
    assert await _tables(creds) == ["identities", "migrations", "sessions", "users"]
    overview = (await team.vic.client.get("/v1/orgs/acme/projects/web/overview")).json()
    assert overview["resources"]["auth"]["provisioned"] is True

    # Idempotent: the same status, one audit row, the schema as it was (rows kept).
    await as_project(creds, "INSERT INTO svc_auth.users (id, email) VALUES ('u1', 'ada@example.com')")
    assert (await team.alice.client.post(A)).json() == granted.json()
    assert await as_project(creds, "SELECT id FROM svc_auth.users") == [("u1",)]
    assert [a for a, _, _ in await _audit(db_svc)] == ["auth.grant"]

    # Revoke keeps the schema and its rows; 204 again; a viewer or member may not.
    assert_error(await team.bob.client.delete(A), 403, "forbidden")
    assert (await team.alice.client.delete(A)).status_code == 204
    assert (await team.alice.client.delete(A)).status_code == 204
    assert (await team.vic.client.get(A)).json()["granted"] is False
    assert await _tables(creds) == ["identities", "migrations", "sessions", "users"]
    assert await as_project(creds, "SELECT id FROM svc_auth.users") == [("u1",)]
    assert [(a, who) for a, who, _ in await _audit(db_svc)] == [("auth.grant", "dev:bob"), ("auth.revoke", "dev:alice")]
    # The other org's project saw none of it.
    assert (await team.eve.client.get("/v1/orgs/other/projects/site/auth")).json()["granted"] is False


async def test_a_schema_dropped_by_the_project_comes_back_with_the_next_grant(db_svc: Svc) -> None:
    team, creds = await _granted_team(db_svc)
    await as_project(creds, "DROP SCHEMA svc_auth CASCADE")
    again = await team.bob.client.post(A)
    assert again.status_code == 200, again.text  # (a 422 once in a full run: its words, next time)
    assert await _tables(creds) == ["identities", "migrations", "sessions", "users"]
    assert await as_project(creds, "SELECT version FROM svc_auth.migrations") == [(1,)]


async def test_the_schema_cycle_migrates_the_projects_granted_before_a_new_version(db_svc: Svc) -> None:
    """A project granted by an older svc (its grant at an older version) is brought to the latest
    by the cycle; one at the latest is not touched; a revoked one waits for its next grant."""
    team, creds = await _granted_team(db_svc)
    await as_project(creds, "DROP SCHEMA svc_auth CASCADE")  # as a svc before the schema had it
    async with db_svc.ctx.db.transaction(write=True) as s:
        (await s.scalars(select(AuthGrant))).one().schema_version = 0
    async with unit_of_work(db_svc.ctx, Tx.READ_THEN_WRITE) as uow:
        assert await jobs.migrate_behind(uow) == 1
    assert await _tables(creds) == ["identities", "migrations", "sessions", "users"]
    async with db_svc.ctx.db.transaction(write=False) as s:
        assert (await s.scalars(select(AuthGrant))).one().schema_version == schema.LATEST
    async with unit_of_work(db_svc.ctx, Tx.READ_THEN_WRITE) as uow:
        assert await jobs.migrate_behind(uow) == 0
    assert (await team.alice.client.delete(A)).status_code == 204
    async with db_svc.ctx.db.transaction(write=True) as s:
        (await s.scalars(select(AuthGrant))).one().schema_version = 0
    async with unit_of_work(db_svc.ctx, Tx.READ_THEN_WRITE) as uow:
        assert await jobs.migrate_behind(uow) == 0  # revoked: its next grant migrates it


async def test_settings_patch_changes_only_what_is_sent(db_svc: Svc) -> None:
    team = await make_team(db_svc, project="web")
    # Without a grant: not_granted; a missing project: not_found.
    assert_error(await team.bob.client.patch(A, json={"sessionDays": 7}), 404, "not_granted")
    assert_error(await team.bob.client.patch("/v1/orgs/acme/projects/nope/auth", json={"sessionDays": 7}),
                 404, "not_found")
    await team.bob.client.post(DB)
    assert (await team.bob.client.post(A)).status_code == 200
    assert_error(await team.vic.client.patch(A, json={"sessionDays": 7}), 403, "forbidden")

    r = await team.bob.client.patch(A, json={"sessionDays": 7})
    assert r.status_code == 200, r.text
    assert r.json()["settings"] == DEFAULTS | {"sessionDays": 7}
    branded = {"brandName": "Ada's Shop", "brandColor": "#12AB9f", "logoUrl": "https://cdn.example.com/logo.png"}
    r = await team.bob.client.patch(A, json=branded)
    assert r.json()["settings"] == {"sessionDays": 7, **branded, "brandColor": "#12ab9f"}
    r = await team.bob.client.patch(A, json={"brandName": None})
    assert r.json()["settings"]["brandName"] is None and r.json()["settings"]["sessionDays"] == 7

    for bad in ({"sessionDays": 0}, {"sessionDays": 366}, {"sessionDays": "30"}, {"sessionDays": None},
                {"sessionDays": True}, {"brandColor": "red"}, {"brandColor": "#12345"}, {"logoUrl": "javascript:x"},
                {"logoUrl": "ftp://example.com/a.png"}, {"brandName": "x" * 101}, {"theme": "dark"}):
        assert_error(await team.bob.client.patch(A, json=bad), 400, "bad_request")
    assert (await team.vic.client.get(A)).json()["settings"]["sessionDays"] == 7  # nothing changed
    changes = [d for a, _, d in await _audit(db_svc) if a == "auth.settings"]
    assert changes == [{"changed": {"sessionDays": 7}}, {"changed": {**branded, "brandColor": "#12ab9f"}},
                       {"changed": {"brandName": None}}]


async def test_providers_put_and_delete(db_svc: Svc) -> None:
    team = await make_team(db_svc, project="web")
    put = {"clientId": "Iv1.abc", "clientSecret": SECRET}
    assert_error(await team.alice.client.put(A + "/providers/github", json=put), 404, "not_granted")
    await team.bob.client.post(DB)
    await team.bob.client.post(A)
    assert_error(await team.bob.client.put(A + "/providers/github", json=put), 403, "forbidden")

    r = await team.alice.client.put(A + "/providers/github", json=put)
    assert r.status_code == 200, r.text
    assert r.json()["providers"] == [{"name": "github", "clientId": "Iv1.abc"}]
    assert r.json()["configured"] is True
    assert SECRET not in r.text
    # Rotation: the same PUT; one row, the new client id.
    r = await team.alice.client.put(A + "/providers/github", json={"clientId": "Iv1.new", "clientSecret": "s2"})
    assert r.json()["providers"] == [{"name": "github", "clientId": "Iv1.new"}]
    await team.alice.client.put(A + "/providers/microsoft", json={"clientId": "ms-app", "clientSecret": "s3"})
    assert [p["name"] for p in (await team.vic.client.get(A)).json()["providers"]] == ["github", "microsoft"]

    for name, body in (("facebook", put), ("GitHub", put), ("oidc", put),
                       ("google", {"clientId": "", "clientSecret": "x"}),
                       ("google", {"clientId": "x", "clientSecret": ""}),
                       ("google", {"clientId": "   ", "clientSecret": "x"}),
                       ("google", {"clientId": "x"}), ("google", {})):
        assert_error(await team.alice.client.put(A + f"/providers/{name}", json=body), 400, "invalid_provider")
    assert_error(await team.alice.client.put(A + "/providers/google", json={**put, "scope": "x"}), 400, "bad_request")
    assert [p["name"] for p in (await team.vic.client.get(A)).json()["providers"]] == ["github", "microsoft"]

    # The secret: sealed at rest (and bound to its project and provider), never in the audit trail.
    async with db_svc.ctx.db.transaction(write=False) as s:
        rows = {r.name: r for r in (await s.scalars(select(AuthProvider))).all()}
    assert b"s2" not in rows["github"].sealed_secret
    assert service.client_secret(db_svc.ctx, rows["github"]) == "s2"
    moved = AuthProvider(project_id=rows["github"].project_id, name="google", client_id="x",
                         sealed_secret=rows["github"].sealed_secret)
    with pytest.raises(InvalidTag):  # a sealed secret moved to another provider's row does not unseal
        service.client_secret(db_svc.ctx, moved)
    trail = await _audit(db_svc)
    assert SECRET not in json.dumps(trail) and '"s2"' not in json.dumps(trail)
    assert [d for a, _, d in trail if a == "auth.provider.set"] == [
        {"provider": "github", "clientId": "Iv1.abc"}, {"provider": "github", "clientId": "Iv1.new"},
        {"provider": "microsoft", "clientId": "ms-app"}]

    # Delete: the identities at that provider go, the end users stay; idempotent; admins only.
    creds = (await team.bob.client.get(DB + "/connect")).json()
    await as_project(creds, "INSERT INTO svc_auth.users (id) VALUES ('u1')",
                     "INSERT INTO svc_auth.identities (provider, subject, user_id) VALUES ('github', '1', 'u1'), "
                     "('microsoft', 'm1', 'u1')")
    assert_error(await team.bob.client.delete(A + "/providers/github"), 403, "forbidden")
    assert (await team.alice.client.delete(A + "/providers/github")).status_code == 204
    assert (await team.alice.client.delete(A + "/providers/github")).status_code == 204
    assert (await team.alice.client.delete(A + "/providers/facebook")).status_code == 204
    assert await as_project(creds, "SELECT provider FROM svc_auth.identities") == [("microsoft",)]
    assert await as_project(creds, "SELECT id FROM svc_auth.users") == [("u1",)]
    status = (await team.vic.client.get(A)).json()
    assert status["providers"] == [{"name": "microsoft", "clientId": "ms-app"}] and status["configured"] is True
    assert [d for a, _, d in await _audit(db_svc) if a == "auth.provider.delete"] == [{"provider": "github"}]


async def test_status_lists_every_host_and_a_revoke_keeps_the_providers(db_svc: Svc) -> None:
    team, _ = await _granted_team(db_svc)
    r = await team.alice.client.post("/v1/orgs/acme/projects/web/hostnames", json={"name": "shop.example.com"})
    assert r.status_code in (200, 201), r.text
    hosts = (await team.vic.client.get(A)).json()["hosts"]
    assert hosts[0].startswith("web-acme.") and hosts[1:] == ["shop.example.com"]
    await team.alice.client.put(A + "/providers/google", json={"clientId": "g-app", "clientSecret": "g"})
    await team.bob.client.patch(A, json={"sessionDays": 3})
    await team.alice.client.delete(A)
    revoked = (await team.vic.client.get(A)).json()
    assert revoked["granted"] is False and revoked["configured"] is False
    assert_error(await team.bob.client.patch(A, json={"sessionDays": 4}), 404, "not_granted")
    again = (await team.bob.client.post(A)).json()
    assert again["providers"] == [{"name": "google", "clientId": "g-app"}] and again["settings"]["sessionDays"] == 3
    async with db_svc.ctx.db.transaction(write=False) as s:
        assert (await s.scalars(select(AuthGrant))).one().schema_version == 1
