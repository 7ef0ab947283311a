"""Secrets: /v1/orgs/{org}/projects/{project}/secrets, sealing at rest, and reveal for the runtime."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.exceptions import InvalidTag
from sqlalchemy import select, update

from svc.domains.secrets import service
from svc.domains.secrets.errors import SecretNotFound
from svc.models import AuditEvent, Base, Project, Secret
from svc.settings import Settings
from tests.cli.conftest import running_server
from tests.support.api import Svc, User, assert_error
from tests.support.team import Team, make_team

URL = "/v1/orgs/acme/projects/web/secrets"
META_FIELDS = {"name", "version", "updatedAt"}


async def _team(svc: Svc) -> Team:
    return await make_team(svc, project="web")


async def _project(svc: Svc, name: str = "web") -> Project:
    async with svc.ctx.db.transaction(write=False) as s:
        project = (await s.scalars(select(Project).where(Project.name == name))).one()
        s.expunge(project)
        return project


async def _reveal(svc: Svc, name: str, project: str = "web") -> str:
    p = await _project(svc, project)
    async with svc.ctx.db.transaction(write=False) as s:
        return await service.reveal(s, svc.ctx, p, name)


async def _row(svc: Svc, name: str) -> Secret | None:
    async with svc.ctx.db.transaction(write=False) as s:
        return await s.get(Secret, ((await _project(svc)).id, name))


async def _listed(user: User) -> dict[str, int]:
    r = await user.client.get(URL)
    assert r.status_code == 200, r.text
    return {m["name"]: m["version"] for m in r.json()["secrets"]}


async def test_set_list_delete_and_versions(svc: Svc) -> None:
    team = await _team(svc)
    bob = team.bob
    assert (await bob.client.get(URL)).json() == {"secrets": []}

    r = await bob.client.put(f"{URL}/API_KEY", json={"value": "first value"})
    assert r.status_code == 200, r.text
    first = r.json()
    assert set(first) == META_FIELDS and first["name"] == "API_KEY" and first["version"] == 1
    assert first["updatedAt"].endswith("Z")
    assert await _reveal(svc, "API_KEY") == "first value"

    # Not idempotent: every set bumps the version, even with the same value.
    second = (await bob.client.put(f"{URL}/API_KEY", json={"value": "second value"})).json()
    third = (await team.alice.client.put(f"{URL}/API_KEY", json={"value": "second value"})).json()
    assert (second["version"], third["version"]) == (2, 3)
    assert third["updatedAt"] >= second["updatedAt"] >= first["updatedAt"]
    assert await _reveal(svc, "API_KEY") == "second value"

    await bob.client.put(f"{URL}/B", json={"value": ""})  # an empty value is a value
    assert await _reveal(svc, "B") == ""
    listed = (await bob.client.get(URL)).json()["secrets"]
    assert [m["name"] for m in listed] == ["API_KEY", "B"]  # by name
    assert all(set(m) == META_FIELDS for m in listed)
    assert listed[0] == third

    r = await bob.client.delete(f"{URL}/API_KEY")
    assert r.status_code == 204 and r.content == b""
    assert await _listed(bob) == {"B": 1}
    assert_error(await bob.client.delete(f"{URL}/API_KEY"), 404, "not_found")
    with pytest.raises(SecretNotFound):
        await _reveal(svc, "API_KEY")
    # Set again after a delete: a new secret, version 1.
    assert (await bob.client.put(f"{URL}/API_KEY", json={"value": "again"})).json()["version"] == 1

    audit = await _audit(svc)
    assert [(a.action, a.target, a.data) for a in audit] == [
        ("secret.set", "web/API_KEY", {"project": "web", "name": "API_KEY", "version": 1}),
        ("secret.set", "web/API_KEY", {"project": "web", "name": "API_KEY", "version": 2}),
        ("secret.set", "web/API_KEY", {"project": "web", "name": "API_KEY", "version": 3}),
        ("secret.set", "web/B", {"project": "web", "name": "B", "version": 1}),
        ("secret.delete", "web/API_KEY", {"project": "web", "name": "API_KEY"}),
        ("secret.set", "web/API_KEY", {"project": "web", "name": "API_KEY", "version": 1}),
    ]
    assert {a.org_slug for a in audit} == {"acme"}
    assert [a.actor_subject for a in audit][:3] == ["dev:bob", "dev:bob", "dev:alice"]


async def _audit(svc: Svc) -> list[AuditEvent]:
    async with svc.ctx.db.transaction(write=False) as s:
        rows = await s.scalars(select(AuditEvent).where(AuditEvent.action.like("secret.%"))
                               .order_by(AuditEvent.at, AuditEvent.id))
        return list(rows.all())


async def test_names_follow_the_rules(svc: Svc) -> None:
    team = await _team(svc)
    bob = team.bob
    for good in ("A", "Z9", "API_KEY_2", "A" + "B" * 63, "X_"):
        r = await bob.client.put(f"{URL}/{good}", json={"value": "v"})
        assert r.status_code == 200, (good, r.text)
        assert r.json()["name"] == good
    before = await _listed(bob)
    for bad in ("a", "api_key", "1ABC", "_X", "A" * 65, "A-B", "A.B", "ÄB", "A%20B", "A%0A", "%20A"):
        assert_error(await bob.client.put(f"{URL}/{bad}", json={"value": "v"}), 400, "bad_request")
        assert_error(await bob.client.delete(f"{URL}/{bad}"), 400, "bad_request")
    for reserved in ("DB", "ASSETS", "SVC_", "SVC_TOKEN", "SVC_X_Y"):
        body = assert_error(await bob.client.put(f"{URL}/{reserved}", json={"value": "v"}), 400, "reserved_name")
        assert body["details"] == {"name": reserved}
        assert_error(await bob.client.delete(f"{URL}/{reserved}"), 400, "reserved_name")
    for near in ("DB_URL", "ASSETS2", "SVC", "MY_SVC_X"):  # only the exact names and the SVC_ prefix are reserved
        assert (await bob.client.put(f"{URL}/{near}", json={"value": "v"})).status_code == 200
    assert await _listed(bob) == before | {"DB_URL": 1, "ASSETS2": 1, "SVC": 1, "MY_SVC_X": 1}


async def test_bad_bodies_change_nothing(svc: Svc) -> None:
    team = await _team(svc)
    bob = team.bob
    await bob.client.put(f"{URL}/TOKEN", json={"value": "kept"})
    bodies: list[Any] = [{}, {"value": 5}, {"value": None}, {"value": ["x"]}, {"value": "x", "extra": 1},
                         {"Value": "x"}, {"value": "a\x00b"}, [], "x"]
    for body in bodies:
        assert_error(await bob.client.put(f"{URL}/TOKEN", json=body), 400, "bad_request")
    for raw in (b"", b"{", b"not json", b'{"value": "\\ud800"}', b'{"value": "a\\udfffb"}'):
        r = await bob.client.put(f"{URL}/TOKEN", content=raw, headers={"content-type": "application/json"})
        assert_error(r, 400, "bad_request")
    assert await _listed(bob) == {"TOKEN": 1}
    assert await _reveal(svc, "TOKEN") == "kept"
    assert [a.action for a in await _audit(svc)] == ["secret.set"]


async def test_value_bound_is_65536_bytes_of_utf8(svc: Svc) -> None:
    team = await _team(svc)
    bob = team.bob
    ascii_max = "a" * 65_536
    wide_max = "é" * 32_768  # 2 bytes each: exactly 65,536 bytes
    emoji_max = "\U0001f511" * 16_384  # 4 bytes each
    for name, value in (("ASCII", ascii_max), ("WIDE", wide_max), ("EMOJI", emoji_max)):
        r = await bob.client.put(f"{URL}/{name}", json={"value": value})
        assert r.status_code == 200, r.text[:200]
        assert await _reveal(svc, name) == value
    for value in (ascii_max + "a", wide_max + "a", "é" * 40_000, emoji_max + "é", "a" * 1_000_000):
        body = assert_error(await bob.client.put(f"{URL}/ASCII", json={"value": value}), 400, "bad_request")
        assert value[:64] not in json.dumps(body)
    assert await _listed(bob) == {"ASCII": 1, "EMOJI": 1, "WIDE": 1}
    assert await _reveal(svc, "ASCII") == ascii_max


async def test_roles(svc: Svc) -> None:
    team = await _team(svc)
    await team.bob.client.put(f"{URL}/KEY", json={"value": "v"})
    vic = team.vic.client
    assert_error(await vic.get(URL), 403, "forbidden")
    assert_error(await vic.put(f"{URL}/KEY", json={"value": "w"}), 403, "forbidden")
    assert_error(await vic.put(f"{URL}/bad name", json={"value": "w"}), 403, "forbidden")  # role first
    assert_error(await vic.delete(f"{URL}/KEY"), 403, "forbidden")
    eve = team.eve.client
    assert_error(await eve.get(URL), 404, "not_found")
    assert_error(await eve.put(f"{URL}/KEY", json={"value": "w"}), 404, "not_found")
    assert_error(await eve.delete(f"{URL}/KEY"), 404, "not_found")
    assert_error(await svc.anon.get(URL), 401, "unauthorized")
    assert_error(await svc.anon.put(f"{URL}/KEY", json={"value": "w"}), 401, "unauthorized")
    assert_error(await svc.anon.delete(f"{URL}/KEY"), 401, "unauthorized")
    missing = "/v1/orgs/acme/projects/nope/secrets"
    assert_error(await team.bob.client.get(missing), 404, "not_found")
    assert_error(await team.bob.client.put(f"{missing}/KEY", json={"value": "w"}), 404, "not_found")
    assert await _listed(team.alice) == {"KEY": 1}
    assert await _reveal(svc, "KEY") == "v"


async def test_secrets_belong_to_one_project(svc: Svc) -> None:
    team = await _team(svc)
    assert (await team.alice.client.post("/v1/orgs/acme/projects", json={"name": "api"})).status_code == 201
    await team.bob.client.put(f"{URL}/KEY", json={"value": "for web"})
    await team.bob.client.put("/v1/orgs/acme/projects/api/secrets/KEY", json={"value": "for api"})
    await team.bob.client.put("/v1/orgs/acme/projects/api/secrets/KEY", json={"value": "for api 2"})
    assert await _reveal(svc, "KEY", "web") == "for web"
    assert await _reveal(svc, "KEY", "api") == "for api 2"
    assert await _listed(team.bob) == {"KEY": 1}
    assert_error(await team.bob.client.delete("/v1/orgs/acme/projects/api/secrets/OTHER"), 404, "not_found")


async def test_concurrent_sets_get_distinct_versions(svc: Svc) -> None:
    team = await _team(svc)
    results = await asyncio.gather(*(team.bob.client.put(f"{URL}/RACE", json={"value": f"v{i}"}) for i in range(8)))
    assert all(r.status_code == 200 for r in results), [r.text for r in results]
    assert sorted(r.json()["version"] for r in results) == list(range(1, 9))
    last = max(results, key=lambda r: r.json()["version"])
    assert await _reveal(svc, "RACE") == json.loads(last.request.content)["value"]


async def test_project_secret_cap(svc: Svc) -> None:
    team = await _team(svc)
    for i in range(service.MAX_SECRETS):
        assert (await team.bob.client.put(f"{URL}/S{i}", json={"value": "v"})).status_code == 200
    body = assert_error(await team.bob.client.put(f"{URL}/ONE_MORE", json={"value": "v"}), 409, "too_many_secrets")
    assert body["details"] == {"limit": service.MAX_SECRETS, "count": service.MAX_SECRETS}
    assert (await team.bob.client.put(f"{URL}/S0", json={"value": "w"})).json()["version"] == 2  # updates still work
    assert (await team.bob.client.delete(f"{URL}/S0")).status_code == 204
    assert (await team.bob.client.put(f"{URL}/ONE_MORE", json={"value": "v"})).status_code == 200


PLAINTEXT = "pl41nt3xt-Secret-Value-7c1f"


async def test_the_value_never_leaves_sealed_storage(svc: Svc, settings: Settings, store: str) -> None:
    team = await _team(svc)
    bob = team.bob.client
    responses = [await bob.put(f"{URL}/DATABASE_PASSWORD", json={"value": PLAINTEXT}),
                 await bob.put(f"{URL}/OTHER", json={"value": PLAINTEXT + "2"}),
                 await bob.get(URL),
                 await bob.put(f"{URL}/DATABASE_PASSWORD", json={"value": PLAINTEXT}),
                 await bob.put(f"{URL}/DB", json={"value": PLAINTEXT}),  # refused: reserved
                 await bob.put(f"{URL}/LARGE", json={"value": PLAINTEXT * 3000}),  # refused: too large
                 await team.vic.client.put(f"{URL}/OTHER", json={"value": PLAINTEXT}),  # refused: role
                 await bob.delete(f"{URL}/OTHER")]
    assert [r.status_code for r in responses] == [200, 200, 200, 200, 400, 400, 403, 204]
    for r in responses:
        assert PLAINTEXT not in r.text
        assert PLAINTEXT not in str(r.headers)

    # Every row of every table: the plaintext is nowhere, sealed or not.
    needle = PLAINTEXT.encode()
    async with svc.ctx.db.transaction(write=False) as s:
        for table in Base.metadata.sorted_tables:
            for row in (await s.execute(table.select())).all():
                for value in row:
                    blob = value if isinstance(value, bytes) else json.dumps(value, default=str).encode()
                    assert needle not in blob, (table.name, row)
    audit = await _audit(svc)
    assert [a.action for a in audit] == ["secret.set", "secret.set", "secret.set", "secret.delete"]
    if store == "sqlite":  # and not in any file svc wrote: the database, its WAL, anything else
        for path in Path(settings.data_dir).rglob("*"):
            if path.is_file():
                assert needle not in path.read_bytes(), path


def test_the_debug_log_of_svc_serve_records_the_requests_but_never_the_value(tmp_path: Path) -> None:
    """`svc serve --log-level debug` as an operator runs it (its own log set-up, every request in
    the access log, the store's activity): the value is in no line of its output."""
    with running_server(tmp_path, log_level="debug") as url, httpx.Client(base_url=url, timeout=30) as c:
        def login(subject: str) -> dict[str, str]:
            token = c.post("/v1/auth/dev/login", json={"subject": subject}).json()["token"]
            return {"authorization": f"Bearer {token}"}

        alice, bob, vic = login("alice"), login("bob"), login("vic")
        assert c.post("/v1/orgs", json={"slug": "acme"}, headers=alice).status_code == 201
        assert c.post("/v1/orgs/acme/projects", json={"name": "web"}, headers=alice).status_code == 201
        for subject, role in (("bob", "member"), ("vic", "viewer")):
            r = c.post("/v1/orgs/acme/members", json={"provider": "dev", "subject": subject, "role": role},
                       headers=alice)
            assert r.status_code == 201, r.text
        requests = [("PUT", "DATABASE_PASSWORD", bob, PLAINTEXT, 200),
                    ("PUT", "DATABASE_PASSWORD", bob, PLAINTEXT, 200),
                    ("PUT", "DB", bob, PLAINTEXT, 400),  # reserved
                    ("PUT", "LARGE", bob, PLAINTEXT * 3000, 400),  # too large
                    ("PUT", "OTHER", vic, PLAINTEXT, 403),  # a viewer
                    ("DELETE", "DATABASE_PASSWORD", bob, None, 204)]
        for method, name, who, value, status in requests:
            body = {"value": value} if value is not None else None
            assert c.request(method, f"{URL}/{name}", json=body, headers=who).status_code == status
        assert c.get(URL, headers=bob).status_code == 200
    log = (tmp_path / "server.log").read_text(errors="replace")
    for method, name, _, _, status in requests:
        assert f'"{method} {URL}/{name} HTTP/1.1" {status}' in log, f"{method} {name} was not logged:\n{log[-3000:]}"
    assert PLAINTEXT not in log


async def test_sealed_value_is_bound_to_its_project_and_name(svc: Svc) -> None:
    team = await _team(svc)
    await team.bob.client.put(f"{URL}/ONE", json={"value": PLAINTEXT})
    await team.bob.client.put(f"{URL}/TWO", json={"value": PLAINTEXT})
    project = await _project(svc)
    one, two = await _row(svc, "ONE"), await _row(svc, "TWO")
    assert one is not None and two is not None
    assert PLAINTEXT.encode() not in one.sealed_value
    assert one.sealed_value != two.sealed_value  # a fresh nonce each time
    keys = svc.ctx.keys
    assert keys.unseal(one.sealed_value, context=f"{project.id}/ONE") == PLAINTEXT.encode()
    for wrong in (f"{project.id}/TWO", "other-project/ONE", "ONE", ""):
        with pytest.raises(InvalidTag):
            keys.unseal(one.sealed_value, context=wrong)
    # A sealed value copied onto another row does not unseal there.
    async with svc.ctx.db.transaction() as s:
        await s.execute(update(Secret).where(Secret.project_id == project.id, Secret.name == "TWO")
                        .values(sealed_value=one.sealed_value))
    with pytest.raises(InvalidTag):
        await _reveal(svc, "TWO")
    assert await _reveal(svc, "ONE") == PLAINTEXT
