"""Validation failures read as plain sentences that name the field, never in pydantic's words and
never with the input in them; each entry of details.errors keeps the field, a machine reason (the
pydantic error type) and the constraint values a client can show."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest

from svc.errors import PATTERN_WORDS, validation_entry
from svc.kit.names import SLUG_PATTERN
from tests.support.api import Svc, User, assert_error

JSON = {"content-type": "application/json"}
LEAKS = ("Value error", "Input should", "String should", "pydantic", "Field required", "Extra inputs",
         "valid dictionary", "errors.pydantic.dev")
SLUG_RULE = "must be 3-32 characters: lowercase letters, digits and inner hyphens"
NAME_RULE = "must be 1-32 characters: lowercase letters, digits and inner hyphens"
SECRET = "hunter2-correct-horse"  # a value that must never come back in an error


@pytest.fixture
def store() -> str:
    """Validation answers before anything reaches the store: on one state store."""
    return "sqlite"


def check_envelope(r: httpx.Response) -> tuple[str, list[dict[str, Any]]]:
    """The 400 bad_request envelope, worded for people; returns its message and details.errors."""
    body = assert_error(r, 400, "bad_request")
    errors = body["details"]["errors"]
    assert errors, body
    for text in [body["message"]] + [e["message"] for e in errors]:
        assert not any(leak in text for leak in LEAKS), text
        assert text[0].isalpha() and not text.endswith("."), text
    for e in errors:
        assert {"field", "reason", "message"} <= e.keys() and e["field"], e
        assert re.fullmatch(r"[a-z_]+", e["reason"]), e
    first = errors[0]
    # The top message is the first problem's sentence, which names its field.
    assert body["message"].startswith(first["message"]), body
    assert first["field"].split(".")[-1] in body["message"] or first["field"] == "body", body
    return body["message"], errors


async def failure(client: httpx.AsyncClient, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
    """The only entry of a request's validation failure."""
    message, errors = check_envelope(await client.request(method, path, **kwargs))
    assert len(errors) == 1 and message == errors[0]["message"], errors
    return errors[0]


async def test_common_failures_read_as_sentences_with_field_and_reason(svc: Svc) -> None:
    alice = await svc.login("alice")
    c, org = alice.client, alice.personal_org
    cases: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = [
        # missing, wrong type, too long, bad pattern: each with the rule in words and its bounds
        ("POST", "/v1/orgs", {"json": {}},
         {"field": "slug", "reason": "missing", "message": "slug is required"}),
        ("POST", "/v1/orgs", {"json": {"slug": 12}},
         {"field": "slug", "reason": "string_type", "message": "slug must be a string"}),
        ("POST", "/v1/orgs", {"json": {"slug": "a" * 33}},
         {"field": "slug", "reason": "string_too_long", "message": f"slug {SLUG_RULE}",
          "minLength": 3, "maxLength": 32, "pattern": SLUG_PATTERN}),
        ("POST", "/v1/orgs", {"json": {"slug": "ab"}},
         {"field": "slug", "reason": "string_too_short", "message": f"slug {SLUG_RULE}",
          "minLength": 3, "maxLength": 32, "pattern": SLUG_PATTERN}),
        ("POST", "/v1/orgs", {"json": {"slug": "Bad_Slug"}},
         {"field": "slug", "reason": "string_pattern_mismatch", "message": f"slug {SLUG_RULE}",
          "minLength": 3, "maxLength": 32, "pattern": SLUG_PATTERN}),
        ("POST", f"/v1/orgs/{org}/projects", {"json": {"name": "-site"}},
         {"field": "name", "reason": "string_pattern_mismatch", "message": f"name {NAME_RULE}",
          "minLength": 1, "maxLength": 32, "pattern": SLUG_PATTERN}),
        ("POST", "/v1/orgs", {"json": {"slug": "acme", "name": "   "}},
         {"field": "name", "reason": "string_too_short", "message": "name must not be empty or only whitespace",
          "minLength": 1}),
        ("POST", "/v1/orgs", {"json": {"slug": "acme", "name": "n" * 101}},
         {"field": "name", "reason": "string_too_long", "message": "name must be at most 100 characters",
          "maxLength": 100}),
        # extra field, bad enum and literal
        ("POST", "/v1/orgs", {"json": {"slug": "acme", "owner": "bob"}},
         {"field": "owner", "reason": "extra_forbidden", "message": "owner is not a field this request accepts"}),
        ("POST", f"/v1/orgs/{org}/invites", {"json": {"email": "bob@example.com", "role": "boss"}},
         {"field": "role", "reason": "enum", "message": "role must be one of: viewer, member, admin",
          "allowed": ["viewer", "member", "admin"]}),
        # numbers
        ("POST", "/v1/me/tokens", {"json": {"name": "ci", "expiresInDays": "30"}},
         {"field": "expiresInDays", "reason": "int_type", "message": "expiresInDays must be a whole number"}),
        ("POST", "/v1/me/tokens", {"json": {"name": "ci", "expiresInDays": 3651}},
         {"field": "expiresInDays", "reason": "less_than_equal", "message": "expiresInDays must be at most 3650",
          "maximum": 3650}),
        # bad email: the pattern of dev login, the validator of invites
        ("POST", "/v1/auth/dev/login", {"json": {"subject": "x", "email": "not-an-address"}},
         {"field": "email", "reason": "string_pattern_mismatch",
          "message": "email must be an email address such as name@example.com",
          "pattern": r"^[^@\s]+@[^@\s]+\.[^@\s]+$"}),
        ("POST", f"/v1/orgs/{org}/invites", {"json": {"email": "bob.example.com"}},
         {"field": "email", "reason": "value_error",
          "message": "email must be an email address such as name@example.com"}),
        # the body as a whole: not JSON, absent, not an object, holding NUL
        ("POST", "/v1/orgs", {"content": b'{"slug": "acme",', "headers": JSON},
         {"field": "body", "reason": "json_invalid", "message": "The body is not valid JSON"}),
        ("POST", "/v1/orgs", {"content": b"", "headers": JSON},
         {"field": "body", "reason": "missing", "message": "The body is required: send a JSON object"}),
        ("POST", "/v1/orgs", {"json": ["acme"]},
         {"field": "body", "reason": "model_attributes_type", "message": "The body must be a JSON object"}),
        ("POST", "/v1/orgs", {"json": {"slug": "ac\x00me"}},
         {"field": "body", "reason": "value_error", "message": "The body must not contain NUL characters"}),
        # parameters outside the body say where they are
        ("GET", f"/v1/orgs/{org}/notifications?limit=lots", {},
         {"field": "query.limit", "reason": "int_parsing",
          "message": "The query parameter limit must be a whole number"}),
        ("GET", f"/v1/orgs/{org}/notifications?limit=0", {},
         {"field": "query.limit", "reason": "greater_than_equal",
          "message": "The query parameter limit must be at least 1", "minimum": 1}),
        ("GET", "/v1/orgs/" + "o" * 65 + "/members", {},
         {"field": "path.orgSlug", "reason": "string_too_long",
          "message": "The path parameter orgSlug must be at most 64 characters", "maxLength": 64}),
    ]
    for method, path, kwargs, expected in cases:
        assert await failure(c, method, path, **kwargs) == expected, (method, path, kwargs)


async def test_several_problems_are_all_listed_and_counted_in_the_message(svc: Svc) -> None:
    alice = await svc.login("alice")
    r = await alice.client.post(f"/v1/orgs/{alice.personal_org}/members",
                                json={"provider": "", "role": "owner", "extra": 1})
    message, errors = check_envelope(r)
    assert [(e["field"], e["reason"]) for e in errors] == [
        ("provider", "string_too_short"), ("subject", "missing"), ("role", "enum"), ("extra", "extra_forbidden")]
    assert message == "provider must not be empty (and 3 more: see details.errors)"


async def test_the_input_is_never_echoed(svc: Svc) -> None:
    alice = await svc.login("alice")
    site = f"/v1/orgs/{alice.personal_org}/projects"
    assert (await alice.client.post(site, json={"name": "site"})).status_code == 201
    access = f"{site}/site/access"
    bodies: list[tuple[str, Any]] = [
        (access, {"mode": "password", "password": SECRET * 20}),  # too long
        (access, {"mode": "password", "password": SECRET[:5]}),  # too short
        (access, {"mode": SECRET}),  # not a mode
        (access, {"mode": "password", "password": SECRET, "passwd": SECRET}),  # an unknown field holding it
        (f"{site}/site/secrets/API_KEY", {"value": 12345}),
        ("/v1/auth/dev/login", {"subject": "x", "email": SECRET}),
    ]
    for path, body in bodies:
        r = await alice.client.put(path, json=body) if path != "/v1/auth/dev/login" else \
            await svc.anon.post(path, json=body)
        _, errors = check_envelope(r)
        shown = json.dumps([{k: v for k, v in e.items() if k != "field"} for e in errors])
        assert SECRET[:5] not in shown and "12345" not in shown, shown
    # A long unknown key is named, cut short.
    r = await alice.client.post("/v1/orgs", json={"slug": "acme", "k" * 5000: 1})
    _, errors = check_envelope(r)
    assert errors[0]["field"] == "k" * 61 + "..." and len(r.text) < 1000


async def test_a_slug_with_a_trailing_newline_is_not_a_slug(svc: Svc) -> None:
    """Python's `$` matches before a final newline; the slug rule must not."""
    alice: User = await svc.login("alice")
    for slug in ("acme\n", "acme\r\n"):
        entry = await failure(alice.client, "POST", "/v1/orgs", json={"slug": slug})
        assert entry["reason"] == "string_pattern_mismatch", entry
    for name in ("site\n",):
        entry = await failure(alice.client, "POST", f"/v1/orgs/{alice.personal_org}/projects", json={"name": name})
        assert entry["message"] == f"name {NAME_RULE}"
    assert (await alice.client.post("/v1/orgs", json={"slug": "acme"})).status_code == 201


async def test_every_pattern_the_api_states_has_words(svc: Svc) -> None:
    """A pattern in the document is explained in words when a value fails it (PATTERN_WORDS, or
    the slug rule of kit/names.py), rather than shown as a bare regular expression. A pattern stated
    for clients only, where the service's own check decides and words the refusal (an SSH key, a
    path to return to), says its rule in the field's description."""
    document = (await svc.anon.get("/v1/openapi.json")).json()
    patterns: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("pattern"), str) and not node.get("description"):
                patterns.add(node["pattern"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(document)
    assert SLUG_PATTERN in patterns
    assert patterns - {SLUG_PATTERN} <= PATTERN_WORDS.keys(), patterns - PATTERN_WORDS.keys()
    alice = await svc.login("alice")
    created = await alice.client.post(f"/v1/orgs/{alice.personal_org}/projects", json={"name": "site"})
    assert created.status_code == 201
    entry = await failure(alice.client, "PUT", f"/v1/orgs/{alice.personal_org}/projects/site/secrets/api-key",
                          json={"value": "v"})
    assert entry["message"] == ("The path parameter secretName must be an uppercase letter followed by up to 63 of "
                                "A-Z, 0-9 and _"), entry


def test_types_svc_does_not_use_yet_still_read_as_sentences() -> None:
    entry = validation_entry({"type": "uuid_parsing", "loc": ("body", "id"), "input": "x",
                              "msg": "Input should be a valid UUID, invalid length",
                              "ctx": {"error": "invalid length"}})
    assert entry == {"field": "id", "reason": "uuid_parsing", "message": "id must be a valid UUID, invalid length"}
    entry = validation_entry({"type": "too_long", "loc": ("body", "records"), "input": [],
                              "msg": "List should have at most 3 items after validation, not 4",
                              "ctx": {"field_type": "List", "max_length": 3, "actual_length": 4}})
    assert entry == {"field": "records", "reason": "too_long", "message": "records must have at most 3 items",
                     "maxItems": 3}
