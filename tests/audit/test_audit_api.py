"""GET /v1/orgs/{org}/audit: the org's audit trail for its admins, newest first, filtered and paged."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from svc.kit.clock import utcnow
from svc.models import AuditEvent
from tests.support.api import Svc, User, assert_error
from tests.support.team import Team, make_team

URL = "/v1/orgs/acme/audit"
EVENT_FIELDS = {"id", "at", "actor", "action", "target", "requestId", "ip", "userAgent", "payload"}


async def _team(svc: Svc) -> Team:
    return await make_team(svc, project="web")


async def _events(user: User, **params: Any) -> dict[str, Any]:
    r = await user.client.get(URL, params=params)
    assert r.status_code == 200, r.text
    return dict(r.json())


def _actions(page: dict[str, Any]) -> list[str]:
    return [e["action"] for e in page["events"]]


async def test_admins_see_what_happened_newest_first(svc: Svc) -> None:
    team = await _team(svc)
    r = await team.bob.client.put("/v1/orgs/acme/projects/web/secrets/API_KEY", json={"value": "hunter2-secret"})
    assert r.status_code == 200, r.text

    page = await _events(team.alice)
    assert set(page) == {"events", "nextCursor"} and page["nextCursor"] is None
    assert _actions(page) == ["secret.set", "member.add", "member.add"]
    newest = page["events"][0]
    assert set(newest) == EVENT_FIELDS
    assert newest["actor"] == "dev:bob" and newest["target"] == "web/API_KEY"
    assert newest["payload"] == {"project": "web", "name": "API_KEY", "version": 1}
    assert newest["requestId"] is None and newest["ip"] is None and newest["userAgent"] is None
    assert newest["at"].endswith("Z") and newest["id"].startswith("aud_")
    assert "hunter2-secret" not in r.text and "hunter2-secret" not in str(page)  # never recorded
    added = page["events"][2]
    assert added["actor"] == "dev:alice" and added["target"] == team.bob.id
    assert added["payload"] == {"user": "dev:bob", "role": "member"}
    ats = [e["at"] for e in page["events"]]
    assert ats == sorted(ats, reverse=True)

    # A personal access token of an admin reads it too.
    pat = (await team.alice.client.post("/v1/me/tokens", json={"name": "audit"})).json()["token"]
    r = await svc.client(pat).get(URL)
    assert r.status_code == 200 and _actions(r.json()) == _actions(page)


async def test_only_admins_of_the_org(svc: Svc) -> None:
    team = await _team(svc)
    body = assert_error(await team.bob.client.get(URL), 403, "forbidden")
    assert body["details"] == {"required": "admin", "role": "member"}
    assert_error(await team.vic.client.get(URL), 403, "forbidden")
    assert_error(await team.eve.client.get(URL), 404, "not_found")  # not a member: not shown to exist
    assert_error(await svc.anon.get(URL), 401, "unauthorized")
    assert_error(await team.alice.client.get("/v1/orgs/nosuch/audit"), 404, "not_found")
    # Another org's events are not listed.
    assert (await team.eve.client.post("/v1/orgs", json={"slug": "other"})).status_code == 201
    r = await team.eve.client.post("/v1/orgs/other/members",
                                   json={"provider": "dev", "subject": "bob", "role": "admin"})
    assert r.status_code == 201
    assert _actions(await _events(team.alice)) == ["member.add", "member.add"]
    other = (await team.eve.client.get("/v1/orgs/other/audit")).json()
    assert _actions(other) == ["member.add"] and other["events"][0]["actor"] == "dev:eve"


async def test_filters_by_action_exact_or_prefix_and_by_actor(svc: Svc) -> None:
    team = await _team(svc)
    for name in ("A", "B"):
        assert (await team.bob.client.put(f"/v1/orgs/acme/projects/web/secrets/{name}",
                                          json={"value": "v"})).status_code == 200
    assert (await team.alice.client.delete("/v1/orgs/acme/projects/web/secrets/A")).status_code == 204
    r = await team.alice.client.put("/v1/orgs/acme/projects/web/access", json={"mode": "org"})
    assert r.status_code == 200, r.text

    assert _actions(await _events(team.alice, action="secret.")) == ["secret.delete", "secret.set", "secret.set"]
    assert _actions(await _events(team.alice, action="secret.set")) == ["secret.set", "secret.set"]
    assert _actions(await _events(team.alice, action="member.")) == ["member.add", "member.add"]
    assert _actions(await _events(team.alice, action="access.")) == ["access.set"]
    assert _actions(await _events(team.alice, action="secret")) == []  # exact: no event is called that
    assert _actions(await _events(team.alice, action="secre.")) == []  # a prefix is whole segments
    assert _actions(await _events(team.alice, actor="dev:bob")) == ["secret.set", "secret.set"]
    assert _actions(await _events(team.alice, actor="dev:bob", action="secret.set")) == ["secret.set", "secret.set"]
    assert _actions(await _events(team.alice, actor="dev:alice", action="secret.")) == ["secret.delete"]
    assert _actions(await _events(team.alice, actor="bob")) == []  # the subject as stored: provider:subject


async def test_cursor_pages_through_everything_once(svc: Svc) -> None:
    team = await _team(svc)
    # Events at the same instant are ordered by id, and a page may end between them.
    newest_id = (await _events(team.alice))["events"][0]["id"]
    async with svc.ctx.db.transaction() as s:
        row = await s.get(AuditEvent, newest_id)
        assert row is not None
        org_id = row.org_id
        at = utcnow() + timedelta(seconds=1)
        for i in range(5):
            s.add(AuditEvent(id=f"aud_same{i}", at=at, action="org.plan", actor_user_id=None, actor_subject=None,
                             org_id=org_id, org_slug="acme", target="acme", data={"n": i}))
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = await _events(team.alice, limit=2, **({"cursor": cursor} if cursor else {}))
        pages += 1
        assert len(page["events"]) <= 2
        seen += [e["id"] for e in page["events"]]
        cursor = page["nextCursor"]
        if cursor is None:
            break
    everything = await _events(team.alice, limit=200)
    assert seen == [e["id"] for e in everything["events"]] and len(seen) == 7 and pages == 4
    assert seen[:5] == [f"aud_same{i}" for i in reversed(range(5))]
    assert everything["events"][0]["actor"] is None  # the operator: no actor
    assert everything["events"][0]["payload"] == {"n": 4}
    # The cursor keeps the filter's place too.
    first = await _events(team.alice, action="org.plan", limit=3)
    rest = await _events(team.alice, action="org.plan", limit=3, cursor=first["nextCursor"])
    assert [e["payload"]["n"] for e in first["events"] + rest["events"]] == [4, 3, 2, 1, 0]
    assert rest["nextCursor"] is None
    # Exactly a page's worth left: no empty next page is promised.
    assert (await _events(team.alice, limit=7))["nextCursor"] is None
    assert (await _events(team.alice, limit=6))["nextCursor"] is not None


async def test_paging_by_following_next_cursor_as_cursor(svc: Svc) -> None:
    """250 events, paged with limit 1, 7 and 100 by sending each nextCursor back as `cursor`: every
    event exactly once, newest first, and the last page has no cursor (both stores)."""
    team = await _team(svc)
    newest_id = (await _events(team.alice))["events"][0]["id"]
    async with svc.ctx.db.transaction() as s:
        row = await s.get(AuditEvent, newest_id)
        assert row is not None
        org_id = row.org_id
        start = utcnow() + timedelta(seconds=1)
        for i in range(250):
            # Some share an instant: the cursor must order them by id too.
            s.add(AuditEvent(id=f"aud_p{i:04d}", at=start + timedelta(milliseconds=i // 3), action="org.plan",
                             actor_user_id=None, actor_subject=None, org_id=org_id, org_slug="acme", target="acme",
                             data={"n": i}))
    everything = [e["id"] for e in (await _events(team.alice, limit=200))["events"]]
    everything += [e["id"] for e in (await _events(team.alice, limit=200, cursor=(await _events(
        team.alice, limit=200))["nextCursor"]))["events"]]
    assert len(everything) == len(set(everything)) >= 250
    for limit in (1, 7, 100):
        seen: list[str] = []
        cursor = None
        while True:
            page = await _events(team.alice, limit=limit, **({"cursor": cursor} if cursor else {}))
            assert 0 < len(page["events"]) <= limit
            seen += [e["id"] for e in page["events"]]
            cursor = page["nextCursor"]
            if cursor is None:
                break
        assert seen == everything, limit
    assert [int(e.removeprefix("aud_p")) for e in everything if e.startswith("aud_p")] == list(reversed(range(250)))


async def test_bad_input_is_a_400_envelope(svc: Svc) -> None:
    team = await _team(svc)
    cases = [
        ({"limit": "0"}, "query.limit", "must be at least 1"),
        ({"limit": "201"}, "query.limit", "must be at most 200"),
        ({"limit": "ten"}, "query.limit", "must be a whole number"),
        ({"before": "not a cursor"}, "query.before", "is not a nextCursor of this list"),
        ({"before": "MTIzOg"}, "query.before", "is not a nextCursor of this list"),  # "123:" with no id
        ({"before": "x" * 121}, "query.before", "at most 120 characters"),
        ({"action": "Member.Add"}, "query.action", "must be an event name"),
        ({"action": "member..add"}, "query.action", "must be an event name"),
        ({"action": ".member"}, "query.action", "must be an event name"),
        ({"action": "a" * 65}, "query.action", "at most 64 characters"),
        ({"action": ""}, "query.action", "must not be empty"),
        ({"actor": "x" * 201}, "query.actor", "at most 200 characters"),
    ]
    for params, field, words in cases:
        body = assert_error(await team.alice.client.get(URL, params=params), 400, "bad_request")
        assert body["details"]["errors"][0]["field"] == field, (params, body)
        assert words in body["message"], (params, body)
    # An unknown query parameter is refused, named (decisions.md): a misspelt cursor never answers
    # the first page again.
    for params in ({"cachebust": "1"}, {"limit": "1", "curser": "abc"}):
        body = assert_error(await team.alice.client.get(URL, params=params), 400, "bad_request")
        assert set(params) - {"limit"} <= set(body["details"]["unknown"]), body
        assert repr(sorted(set(params) - {"limit"})[0]) in body["message"], body
    # `before`, the parameter's earlier name, still works.
    first = await _events(team.alice, limit=1)
    older = await _events(team.alice, limit=1, before=first["nextCursor"])
    assert older["events"] and older["events"][0]["id"] != first["events"][0]["id"]


async def test_the_operation_is_in_the_openapi_document(svc: Svc) -> None:
    spec = (await svc.anon.get("/v1/openapi.json")).json()
    op = spec["paths"]["/v1/orgs/{orgSlug}/audit"]["get"]
    assert op["operationId"] == "listAuditEvents"
    assert {p["name"] for p in op["parameters"]} == {"orgSlug", "limit", "cursor", "before", "action", "actor"}
    event = spec["components"]["schemas"]["AuditEvent"]
    assert set(event["properties"]) == EVENT_FIELDS
    assert set(spec["components"]["schemas"]["AuditEventList"]["properties"]) == {"events", "nextCursor"}
