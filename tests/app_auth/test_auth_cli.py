"""`svc auth ...` against a real `svc serve` whose projects' databases live on a real PostgreSQL
cluster: grant refused without the database (with what to do), then granted; status with the
callback to register for each provider and host; settings changed partially; a provider set with
its secret read from standard input (never echoed, never shown again) and removed; revoke asking
first; the roles' refusals; --json everywhere."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import running_server
from tests.storage.test_cli import _team

SECRET = "cli-secret-7f3a9c"


@pytest.fixture(scope="module")
def auth_server(tmp_path_factory: pytest.TempPathFactory, project_cluster: Any) -> Iterator[str]:
    with running_server(tmp_path_factory.mktemp("svc-auth-server"), project_db_enabled="true",
                        project_db_admin_url=project_cluster.admin_url) as url:
        yield url


def test_grant_status_settings_providers_and_revoke(auth_server: str, tmp_path: Path) -> None:
    owner, member, viewer, where = _team(auth_server, tmp_path)  # a project "site", its org's three roles

    before = viewer.ok("auth", "status", *where, "--json").json()
    assert before["granted"] is False and before["providers"] == [] and before["settings"]["sessionDays"] == 30
    host = before["hosts"][0]
    said = viewer.ok("auth", "status", *where).out
    assert "svc auth grant --project site" in said
    assert "/__svc/auth/callback/github" in said and host in said

    refused = member.fails("database_required", "auth", "grant", *where)
    assert "database" in refused.err
    viewer.fails("forbidden", "auth", "grant", *where)
    member.ok("db", "create", *where)
    granted = member.ok("auth", "grant", *where, "--json").json()
    assert granted["granted"] is True and granted["configured"] is False
    assert "no provider is set" in member.ok("auth", "grant", *where).out  # idempotent

    changed = member.ok("auth", "set", "--session-days", "7", "--brand-name", "Shop", *where, "--json").json()
    assert changed["settings"] == {"sessionDays": 7, "brandName": "Shop", "brandColor": None, "logoUrl": None}
    assert member.ok("auth", "set", "--brand-name", "", *where, "--json").json()["settings"]["brandName"] is None
    member.fails("bad_request", "auth", "set", "--session-days", "0", *where)
    member.fails("nothing_to_change", "auth", "set", *where)

    member.fails("forbidden", "auth", "provider", "set", "github", "--client-id", "Iv1.x", *where, input=SECRET)
    owner.fails("invalid_provider", "auth", "provider", "set", "facebook", "--client-id", "x", *where, input=SECRET)
    set_ = owner.ok("auth", "provider", "set", "github", "--client-id", "Iv1.x", *where, input=SECRET + "\n")
    assert SECRET not in set_.out and SECRET not in set_.err
    assert "with github" in set_.out
    status = viewer.ok("auth", "status", *where, "--json").json()
    assert status["configured"] is True and status["providers"] == [{"name": "github", "clientId": "Iv1.x"}]
    table = viewer.ok("auth", "status", *where).out
    assert "Iv1.x" in table and SECRET not in table and "Sessions last 7 days" in table

    owner.fails("confirm_needed", "auth", "provider", "remove", "github", *where, "--json")
    removed = owner.ok("auth", "provider", "remove", "github", *where, "--yes", "--json").json()
    assert removed == {"project": "site", "provider": "github", "removed": True}
    assert viewer.ok("auth", "status", *where, "--json").json()["providers"] == []

    member.fails("forbidden", "auth", "revoke", *where, "--yes")
    owner.fails("cancelled", "auth", "revoke", *where, input="n\n")
    assert owner.ok("auth", "status", *where, "--json").json()["granted"] is True
    assert "no longer serves sign-in" in owner.ok("auth", "revoke", *where, "--yes").out
    assert viewer.ok("auth", "status", *where, "--json").json()["granted"] is False
