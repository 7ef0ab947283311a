"""The first thing every request meets: NUL in a URL and oversized bodies refused before they are
read (an area that bounds its own uploads, a bundle's, is let through to do so)."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from svc.errors import BadRequest, error_response


class RequestGuard:
    """Refuse NUL in URLs and oversized request bodies before they are read (`is_upload`: a request
    whose body an area bounds itself)."""

    def __init__(self, app: ASGIApp, limit: int, is_upload: Callable[[Scope], bool]) -> None:
        self.app = app
        self.limit = limit
        self.is_upload = is_upload

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            # NUL cannot be stored in PostgreSQL text and is never part of a valid name or token.
            if b"%00" in scope.get("raw_path", b"") or b"%00" in scope.get("query_string", b""):
                await error_response(BadRequest("The URL must not contain NUL characters"))(scope, receive, send)
                return
            if not self.is_upload(scope):
                for name, value in scope.get("headers", []):
                    if name == b"content-length" and value.isdigit() and int(value) > self.limit:
                        resp = error_response(BadRequest(f"The request body is over {self.limit} bytes"))
                        await resp(scope, receive, send)
                        return
                # A chunked body (no Content-Length) is counted as it arrives.
                receive = _bounded(receive, self.limit)
        await self.app(scope, receive, send)


def _bounded(receive: Receive, limit: int) -> Receive:
    """`receive`, refusing a body once it passes `limit` bytes. Raised as FastAPI's HTTPException,
    which its body reading passes on as it is (any other error becomes a vague 400)."""
    seen = 0

    async def bounded() -> Message:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                raise HTTPException(status_code=400, detail=f"The request body is over {limit} bytes")
        return message

    return bounded
