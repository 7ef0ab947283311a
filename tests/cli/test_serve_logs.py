"""`svc serve --log-level debug` logs every request and the store's activity, and still never a
secret: no session token, no invite token (they travel in paths), no login code or state."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.cli.conftest import running_server


def test_debug_logs_carry_no_tokens_codes_or_invite_links(tmp_path: Path) -> None:
    with running_server(tmp_path, log_level="debug") as url, httpx.Client(base_url=url, timeout=30) as c:
        login = c.post("/v1/auth/dev/login", json={"subject": "alice"}).json()
        session_token = login["token"]
        auth = {"authorization": f"Bearer {session_token}"}
        assert c.post("/v1/orgs", json={"slug": "acme"}, headers=auth).status_code == 201
        invite = c.post("/v1/orgs/acme/invites", json={"email": "bob@example.com", "role": "member"},
                        headers=auth).json()
        invite_token = invite["token"]
        assert c.get(f"/v1/invites/{invite_token}").status_code == 200
        bob = c.post("/v1/auth/dev/login", json={"subject": "bob"}).json()
        accepted = c.post(f"/v1/invites/{invite_token}/accept", headers={"authorization": f"Bearer {bob['token']}"})
        assert accepted.status_code == 200, accepted.text
        c.get("/v1/auth/idp/callback", params={"code": "the-login-code-xyz", "state": "the-state-abc"})
    log = (tmp_path / "server.log").read_text(errors="replace")
    assert "/v1/invites/[redacted]" in log, "the requests were logged"
    for secret in (session_token, bob["token"], invite_token, "the-login-code-xyz", "the-state-abc"):
        assert secret not in log
