"""Git over HTTPS: `{SVC_PUBLIC_URL}/git/{org}/{project}/{repo}.git/...`, served by the git node's
`git http-backend` (adapters/git/http_backend.py) with the request and the answer streamed.

Basic auth: the password is a personal access token (the username is ignored, as GitHub does). No
unit of work is open while git runs: the caller is authorized in a short read, then git streams.
Refusals are text/plain, which git shows its user as "remote: ..." lines."""

from __future__ import annotations

import base64
import binascii
from collections.abc import AsyncIterator, Awaitable, Callable

from fastapi import APIRouter, Request
from fastapi.responses import PlainTextResponse, Response
from starlette.types import Receive, Scope, Send

from svc.adapters.git.port import (
    GitService,
    GitUnavailable,
    GitUnreachable,
    HttpRequest,
    HttpResponse,
    Pusher,
    Refused,
)
from svc.auth.principal import shared_cache
from svc.domains.repos import authorize
from svc.domains.repos.authorize import GitRefusal
from svc.uow import Tx, unit_of_work

router = APIRouter(include_in_schema=False)

PREFIX = "/git/"


def is_git_request(path: str) -> bool:
    """A request whose body git streams (a push): bounded by git, not by the API's body limit."""
    return path.startswith(PREFIX)


def credentials(request: Request) -> str | None:
    """The token from Basic auth's password (or the username, when that is all there is)."""
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "basic" or not value:
        return None
    try:
        user, _, password = base64.b64decode(value.strip(), validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return password or user or None


def service_of(request: Request, rest: str) -> GitService:
    if rest == "git-receive-pack" or request.query_params.get("service") == "git-receive-pack":
        return "receive-pack"
    return "upload-pack"


def _refused(exc: GitRefusal) -> Response:
    headers = {"WWW-Authenticate": 'Basic realm="svc", charset="UTF-8"'} if exc.status == 401 else {}
    return PlainTextResponse(exc.message + "\n", status_code=exc.status, headers=headers)


@router.api_route("/git/{org}/{project}/{repo}/{rest:path}", methods=["GET", "POST"])
async def git_http(request: Request, org: str, project: str, repo: str, rest: str) -> Response:
    ctx = request.app.state.ctx
    node = ctx.adapters.git
    if node is None:
        return PlainTextResponse(f"Git hosting is not available here: {ctx.adapters.off.get('git', 'off')}\n",
                                 status_code=503)
    if not repo.endswith(".git"):
        return PlainTextResponse("A repository's URL ends in .git\n", status_code=404)
    service = service_of(request, rest)
    try:
        async with unit_of_work(ctx, Tx.READ) as uow:
            found = await authorize.by_token(uow.session, credentials(request), org, project,
                                             repo.removesuffix(".git"), service, cache=shared_cache(request))
    except GitRefusal as exc:
        return _refused(exc)
    pusher = None
    if service == "receive-pack" and found.user is not None:
        pusher = Pusher(repo_id=found.repo.id, user_id=found.user.id, name=authorize.pusher_name(found.user),
                        transport="http")
    cgi = HttpRequest(method=request.method, path_info=f"/{rest}", query=request.url.query,
                      content_type=request.headers.get("content-type"),
                      content_encoding=request.headers.get("content-encoding"),
                      git_protocol=request.headers.get("git-protocol"),
                      remote_user=found.user.id if found.user is not None else None,
                      remote_addr=request.client.host if request.client else None)
    try:
        await node.ensure(found.repo.id, found.repo.default_branch)
        exchange = node.serve_http(found.repo.id, cgi, _body(request), pusher)
        answer = await exchange.__aenter__()
    except (GitUnavailable, GitUnreachable) as exc:
        return PlainTextResponse(f"The git node is not available: {exc}\n", status_code=503)
    except Refused as exc:  # a push the gatekeeper would not start (its org's pushes in flight, its quota)
        return PlainTextResponse(f"{exc}\n", status_code=403)

    return GitAnswer(answer, exchange.__aexit__)


class GitAnswer(Response):
    """git's answer, streamed as it comes. Not a StreamingResponse: that one listens for the client
    going away by reading the request's messages, which are the push's body still being fed to git."""

    def __init__(self, answer: HttpResponse, end: Callable[[None, None, None], Awaitable[None]]) -> None:
        super().__init__(status_code=answer.status)
        self.answer = answer
        self.end = end
        self.raw_headers = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in answer.headers]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            async for chunk in self.answer.body:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:  # also when the client went away: git's process is ended, the push id forgotten
            await self.end(None, None, None)


async def _body(request: Request) -> AsyncIterator[bytes]:
    async for chunk in request.stream():
        yield chunk
