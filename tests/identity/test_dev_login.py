from __future__ import annotations

from tests.support.api import Svc, assert_error


async def test_dev_login_issues_a_session_and_personal_org(svc: Svc) -> None:
    r = await svc.anon.post("/v1/auth/dev/login", json={"subject": "Alice", "name": "Alice A"})
    assert r.status_code == 200
    session = r.json()
    assert set(session) == {"token", "expiresAt", "userId", "subject"}
    assert session["expiresAt"].endswith("Z")
    me = await svc.client(session["token"]).get("/v1/me")
    assert me.status_code == 200
    body = me.json()
    assert body["user"] == {"id": session["userId"], "provider": "dev", "subject": "Alice", "email": None,
                            "name": "Alice A"}
    assert body["orgs"] == [{"slug": "alice", "name": "Alice A", "role": "admin", "personal": True,
                             "plan": "free", "projectLimit": 3}]


async def test_same_subject_is_the_same_user_and_personal_org_is_not_recreated(svc: Svc) -> None:
    a = await svc.login("bob")
    b = await svc.login("bob")
    assert a.id == b.id and a.token != b.token
    orgs = (await b.client.get("/v1/orgs")).json()["orgs"]
    assert [o["slug"] for o in orgs if o["personal"]] == ["bob"]


async def test_personal_org_slug_gets_a_suffix_when_taken(svc: Svc) -> None:
    carol = await svc.login("carol")
    r = await carol.client.post("/v1/orgs", json={"slug": "dave", "name": "Dave's shop"})
    assert r.status_code == 201
    dave = await svc.login("Dave")
    assert dave.personal_org == "dave-2"


async def test_bad_dev_login_bodies_are_400(svc: Svc) -> None:
    for body in ({}, {"subject": ""}, {"subject": "x" * 101}, {"subject": 5}, {"subject": "a", "extra": 1},
                 {"subject": "a", "email": "not-an-email"}):
        assert_error(await svc.anon.post("/v1/auth/dev/login", json=body), 400, "bad_request")
    r = await svc.anon.post("/v1/auth/dev/login", content=b"{nope", headers={"content-type": "application/json"})
    assert_error(r, 400, "bad_request")


async def test_unauthenticated_and_bad_tokens_are_401(svc: Svc) -> None:
    assert_error(await svc.anon.get("/v1/me"), 401, "unauthorized")
    assert_error(await svc.client("svc_ses_nonsense").get("/v1/me"), 401, "unauthorized")
    assert_error(await svc.client("svc_pat_bad").get("/v1/orgs"), 401, "unauthorized")


async def test_framework_errors_use_the_envelope(svc: Svc) -> None:
    assert_error(await svc.anon.get("/v1/nope"), 404, "not_found")
    assert_error(await svc.anon.delete("/v1/config"), 405, "method_not_allowed")


async def test_config_names_the_deployment(svc: Svc) -> None:
    r = await svc.anon.get("/v1/config")
    assert r.status_code == 200
    assert r.json()["appDomain"] == "localhost"
    assert r.json()["publicUrl"] == "http://svc.test"


async def test_dev_login_route_does_not_exist_when_switched_off(settings) -> None:  # type: ignore[no-untyped-def]
    from tests.support.api import running_svc

    async with running_svc(settings.model_copy(update={"enable_dev_auth": False})) as off:
        assert_error(await off.anon.post("/v1/auth/dev/login", json={"subject": "a"}), 404, "not_found")
        paths = (await off.anon.get("/v1/openapi.json")).json()["paths"]
        assert "/v1/auth/dev/login" not in paths


async def test_nul_characters_are_refused_everywhere(svc: Svc) -> None:
    assert_error(await svc.anon.post("/v1/auth/dev/login", json={"subject": "a\x00b"}), 400, "bad_request")
    alice = await svc.login("alice")
    assert_error(await alice.client.get("/v1/orgs/al%00ice/members"), 400, "bad_request")
    assert_error(await alice.client.get("/v1/orgs/alice/notifications?limit=%00"), 400, "bad_request")
    assert_error(await alice.client.post("/v1/orgs", json={"slug": "acme", "name": "a\x00"}), 400)
