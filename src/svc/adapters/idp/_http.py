"""HTTP plumbing shared by the providers: one short-lived client per call, failures mapped to the port's errors."""

from __future__ import annotations

from typing import Any

import httpx

from svc.adapters.idp.port import IdpError, IdpUnavailable

TIMEOUT = httpx.Timeout(10.0)
USER_AGENT = "svc-idp/1"
MAX_BODY = 1024 * 1024


def client() -> httpx.AsyncClient:
    # No redirects: a provider endpoint that moves is a configuration problem, not something to follow.
    return httpx.AsyncClient(timeout=TIMEOUT, follow_redirects=False, headers={"user-agent": USER_AGENT})


async def send(http: httpx.AsyncClient, request: httpx.Request, what: str) -> httpx.Response:
    try:
        response = await http.send(request)
    except httpx.HTTPError as exc:
        raise IdpUnavailable(f"could not reach the identity provider ({what}: {type(exc).__name__})") from None
    if response.status_code >= 500:
        raise IdpUnavailable(f"the identity provider failed ({what}: HTTP {response.status_code})")
    return response


def json_body(response: httpx.Response, what: str) -> Any:
    if len(response.content) > MAX_BODY:
        raise IdpError(f"the identity provider's answer is too large ({what})")
    try:
        return response.json()
    except ValueError:
        raise IdpError(f"the identity provider's answer is not JSON ({what}: HTTP {response.status_code})") from None


def json_object(response: httpx.Response, what: str) -> dict[str, Any]:
    body = json_body(response, what)
    if not isinstance(body, dict):
        raise IdpError(f"the identity provider's answer is not a JSON object ({what})")
    return body


def oauth_error(body: dict[str, Any]) -> str:
    """The OAuth error code of a refusal, reduced to a safe token (descriptions are not repeated)."""
    err = body.get("error")
    if isinstance(err, str) and err.replace("_", "").isalnum() and len(err) <= 64:
        return err
    return "unknown"
