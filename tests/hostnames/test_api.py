"""Custom hostnames over the API (both stores): add, list, re-add, taken, remove, roles, and the
bad input the issue lists, each a clear 400 that changes nothing."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from svc.models import Hostname, Job
from tests.hostnames.conftest import ORIGIN, audit, team, until
from tests.support.api import Svc, assert_error
from tests.support.pdns import PDNS_REQUIRED

pytestmark = PDNS_REQUIRED

H = "/v1/orgs/acme/projects/web/hostnames"
OTHER = "/v1/orgs/other/projects/site/hostnames"
FIELDS = {"host", "kind", "status", "verification", "cnameTarget", "lastError", "lastCheckedAt", "certificate"}


async def test_add_list_readd_and_remove(hsvc: Svc) -> None:
    t = await team(hsvc)
    listed = (await t.vic.client.get(H)).json()
    assert listed == {"hostnames": [{"host": "web-acme.localhost", "kind": "default", "status": "active",
                                     "verification": None, "cnameTarget": None, "lastError": None,
                                     "lastCheckedAt": None, "certificate": None}]}

    r = await t.bob.client.post(H, json={"name": "WWW.Example.COM"})
    assert r.status_code == 200, r.text
    added = r.json()
    assert set(added) == FIELDS
    assert added["host"] == "www.example.com" and added["kind"] == "custom" and added["status"] == "pending_dns"
    verification = added["verification"]
    assert verification["type"] == "TXT" and verification["name"] == "_svc-verify.www.example.com"
    assert len(verification["value"]) >= 43  # 32 random bytes, url-safe text
    assert added["cnameTarget"] == ORIGIN and added["lastError"] is None

    # The same name again, in any spelling: the same row, the same token.
    again = await t.alice.client.post(H, json={"name": "www.EXAMPLE.com"})
    assert again.status_code == 200 and again.json()["verification"] == verification
    second = (await t.bob.client.post(H, json={"name": "api.example.com"})).json()
    assert second["verification"]["value"] != verification["value"]

    hosts = (await t.vic.client.get(H)).json()["hostnames"]
    assert [h["host"] for h in hosts] == ["web-acme.localhost", "api.example.com", "www.example.com"]
    assert all(h["status"] == "pending_dns" for h in hosts[1:])

    # The add enqueued a check: it ran against the resolver and says what it saw.
    async def checked() -> Any:
        rows = (await t.vic.client.get(H)).json()["hostnames"]
        return next((h["lastError"] for h in rows if h["host"] == "www.example.com"), None)

    error = await until(checked, "the first check of www.example.com")
    assert "_svc-verify.www.example.com" in error and "it refused" in error and "REFUSED" not in error
    # When it was checked is told too (the CLI's and the dashboard's "last check").
    rows = (await t.vic.client.get(H)).json()["hostnames"]
    assert next(h for h in rows if h["host"] == "www.example.com")["lastCheckedAt"] is not None

    assert (await t.bob.client.delete(f"{H}/WWW.example.com.")).status_code == 204
    assert [h["host"] for h in (await t.vic.client.get(H)).json()["hostnames"]] == [
        "web-acme.localhost", "api.example.com"]
    assert_error(await t.bob.client.delete(f"{H}/www.example.com"), 404, "not_found")
    # Removed, the name is free again, with a new token.
    readded = (await t.bob.client.post(H, json={"name": "www.example.com"})).json()
    assert readded["verification"]["value"] != verification["value"]

    actions = await audit(hsvc)
    assert [(a, target) for a, target, _ in actions] == [
        ("hostname.add", "www.example.com"), ("hostname.add", "api.example.com"),
        ("hostname.delete", "www.example.com"), ("hostname.add", "www.example.com")]
    for _, _, data in actions:
        assert data["project"] == "web"
        assert verification["value"] not in str(data) and readded["verification"]["value"] not in str(data)


async def test_unicode_names_are_stored_as_punycode(hsvc: Svc) -> None:
    t = await team(hsvc)
    r = await t.bob.client.post(H, json={"name": "Bücher.Example"})
    assert r.status_code == 200, r.text
    assert r.json()["host"] == "xn--bcher-kva.example"
    assert r.json()["verification"]["name"] == "_svc-verify.xn--bcher-kva.example"
    # Full-width letters and dots are the same name (UTS-46), as a browser would read them.
    same = await t.bob.client.post(H, json={"name": "ｂüｃｈｅｒ。example"})
    assert same.json() == r.json()
    assert (await t.bob.client.delete(f"{H}/bücher.example")).status_code == 204


async def test_taken_by_another_project(hsvc: Svc) -> None:
    t = await team(hsvc)
    assert (await t.alice.client.post(H, json={"name": "www.example.com"})).status_code == 200
    body = assert_error(await t.eve.client.post(OTHER, json={"name": "WWW.example.com"}), 409, "hostname_taken")
    # Held unproven by another org: the TXT record that would prove it is eve's, to take it over
    # (tests/hostnames/test_claims.py takes one over).
    assert body["details"]["host"] == "www.example.com"
    claim = body["details"]["claim"]
    assert claim["type"] == "TXT" and claim["name"] == "_svc-verify.www.example.com"
    assert claim["value"].startswith("svc-claim-") and claim["value"] in body["message"]
    # Another project of the same org too.
    assert (await t.alice.client.post("/v1/orgs/acme/projects", json={"name": "blog"})).status_code == 201
    assert_error(await t.alice.client.post("/v1/orgs/acme/projects/blog/hostnames", json={"name": "www.example.com"}),
                 409, "hostname_taken")
    # Nor can the other project remove it: it is not theirs.
    assert_error(await t.eve.client.delete(f"{OTHER}/www.example.com"), 404)
    assert [h["host"] for h in (await t.eve.client.get(OTHER)).json()["hostnames"]] == ["site-other.localhost"]
    assert [a for a, _, _ in await audit(hsvc)] == ["hostname.add"]


async def test_default_hostname_stays_and_roles(hsvc: Svc) -> None:
    t = await team(hsvc)
    body = assert_error(await t.alice.client.delete(f"{H}/web-acme.localhost"), 400, "bad_request")
    assert "default hostname" in body["message"]
    assert_error(await t.alice.client.delete(f"{H}/nothing.example.com"), 404, "not_found")
    assert_error(await t.alice.client.delete(f"{H}/not a host"), 404, "not_found")
    assert_error(await t.alice.client.post(f"{H}/nothing.example.com/verify"), 404, "not_found")
    # Verify on the default hostname: it is active, as it is.
    default = await t.bob.client.post(f"{H}/web-acme.localhost/verify")
    assert default.status_code == 200 and default.json()["status"] == "active"

    assert_error(await t.vic.client.post(H, json={"name": "www.example.com"}), 403, "forbidden")
    assert (await t.bob.client.post(H, json={"name": "www.example.com"})).status_code == 200
    assert_error(await t.vic.client.post(f"{H}/www.example.com/verify"), 403, "forbidden")
    assert_error(await t.vic.client.delete(f"{H}/www.example.com"), 403, "forbidden")
    # Outsiders see no such org or project.
    assert_error(await t.eve.client.get(H), 404)
    assert_error(await t.eve.client.post(H, json={"name": "x.example.com"}), 404)
    assert_error(await t.alice.client.get("/v1/orgs/acme/projects/nope/hostnames"), 404)
    assert_error(await hsvc.anon.get(H), 401)
    assert [h["host"] for h in (await t.vic.client.get(H)).json()["hostnames"]] == [
        "web-acme.localhost", "www.example.com"]


BAD_NAMES = [
    ("", "must not be empty"),
    ("   ", "must not be empty"),
    ("*.example.com", "wildcard"),
    ("www.*.example.com", "wildcard"),
    ("a" * 250 + ".com", "at most 253 characters"),
    (".".join(["abcdefghi"] * 25) + ".coms", "at most 253 characters"),  # 254
    ("www..example.com", "empty labels"),
    (".example.com", "empty labels"),
    ("www.example.com.", "must not end with a dot"),
    ("www.example.com..", "must not end with a dot"),
    ("192.0.2.1", "not an IP address"),
    ("2001:db8::1", "not an IP address"),
    ("[2001:db8::1]", "not an IP address"),
    ("[::1]:8080", "not an IP address"),
    ("10.0.0.1.", "not an IP address"),
    ("under_score.example.com", "must not contain _"),
    ("_svc-verify.example.com", "must not contain _"),
    ("localhost", "at least two labels"),
    ("com", "at least two labels"),
    ("a" * 64 + ".example.com", "at most 63 characters"),
    ("-www.example.com", "hyphen"),
    ("www-.example.com", "hyphen"),
    ("www example.com", "spaces"),
    ("☃.example.com", "not a valid internationalized name"),
    ("xn--zz.example.com", "not a valid internationalized name"),
    ("a\u200db.example.com", "not a valid internationalized name"),
    ("ww!w.example.com", "letters, digits and inner hyphens"),
    ("ü" * 60 + ".example.com", "at most 63 characters"),
    # The service's own names: the app domain, the API's host, the nameservers', the fallback origin's.
    ("web-acme.localhost", "service's own domain localhost"),
    ("evil.svc.test", "service's own domain svc.test"),
    ("edge.localhost", "service's own domain"),
    ("ns1.svc.test", "service's own domain svc.test"),
]


async def test_bad_names_are_clear_400s_that_change_nothing(hsvc: Svc) -> None:
    t = await team(hsvc)
    before = (await t.vic.client.get(H)).json()
    for name, words in BAD_NAMES:
        body = assert_error(await t.bob.client.post(H, json={"name": name}), 400, "bad_request")
        assert words in body["message"], (name, body)
        [entry] = body["details"]["errors"]
        assert entry["field"] == "name" and entry["message"] == body["message"]
        assert len(name) < 8 or name not in body["message"], "the input is not echoed"
    for body_json in ({}, {"name": 5}, {"name": "www.example.com", "extra": 1}, {"name": "x" * 1025}):
        assert_error(await t.bob.client.post(H, json=body_json), 400, "bad_request")
    assert (await t.vic.client.get(H)).json() == before
    assert await audit(hsvc) == []
    async with hsvc.ctx.db.transaction(write=False) as s:
        assert (await s.scalars(select(Hostname.host).where(Hostname.kind == "custom"))).all() == []
        kinds = (await s.scalars(select(Job.payload).where(Job.kind == "hostname.verify"))).all()
        assert all(not payload for payload in kinds), "no check was enqueued for a refused name"
