"""HTTP only: what a project's worker's env.email and message.forward() call (the runtime's Email
entrypoint, adapters/workers/dispatcher.js), proved by the runtime's token (X-Svc-Runtime-Token,
which workerd adds to each request it sends svc; a visitor's request never carries it here: the
edge sends /__svc/ to the API's /v1/edge/ only). The project is the one svc named in the binding's
props. Not for API clients: left out of the OpenAPI document.

- POST /v1/runtime/projects/{projectId}/email/send: env.email.send(), the body of POST .../email/send
- POST /v1/runtime/projects/{projectId}/email/forward: message.forward() of a received message
- POST /v1/runtime/projects/{projectId}/email/reply?mailId=: message.reply(), the reply's raw bytes
  (the API's JSON bound of 1 MB holds)"""

from __future__ import annotations

from typing import Any

from fastapi import Body, Header, Path, Query, Request

from svc.deps import Ctx, Uow, api_router
from svc.domains.email import outbound, runtime, schemas, service
from svc.domains.workers import service as workers
from svc.domains.workers.schemas import RUNTIME_PROJECT_ID
from svc.errors import BadRequest
from svc.uow import runs

router = api_router(include_in_schema=False)

_P = "/v1/runtime/projects/{projectId}/email"


@router.post(_P + "/send", status_code=202, response_model=schemas.MailLogEntry)
@runs(outbound.send)
async def runtime_send(body: schemas.SendRequest, uow: Uow, ctx: Ctx,
                       project_id: str = Path(alias="projectId", pattern=RUNTIME_PROJECT_ID),
                       token: str | None = Header(default=None, alias="X-Svc-Runtime-Token")) -> schemas.MailLogEntry:
    workers.check_runtime_token(ctx, token)
    project = await runtime.project_of(uow, project_id)
    row = await outbound.send(uow, project, outbound.Outgoing(
        to=body.to, subject=body.subject, text=body.text, html=body.html, from_local=body.from_,
        reply_to=body.reply_to))
    return service.entry_view(row)


@router.post(_P + "/forward", status_code=202, response_model=schemas.MailLogEntry)
@runs(runtime.forward)
async def runtime_forward(uow: Uow, ctx: Ctx, body: dict[str, Any] = Body(),
                          project_id: str = Path(alias="projectId", pattern=RUNTIME_PROJECT_ID),
                          token: str | None = Header(default=None, alias="X-Svc-Runtime-Token"),
                          ) -> schemas.MailLogEntry:
    workers.check_runtime_token(ctx, token)
    mail_id = body.get("mailId")
    if not isinstance(mail_id, str):
        raise BadRequest("mailId: the received message's id")
    row = await runtime.forward(uow, project_id, mail_id, body.get("to"), body.get("headers"))
    return service.entry_view(row)


@router.post(_P + "/reply", status_code=202, response_model=schemas.MailLogEntry)
@runs(runtime.reply)
async def runtime_reply(request: Request, uow: Uow, ctx: Ctx, mail_id: str = Query(alias="mailId", max_length=40),
                        project_id: str = Path(alias="projectId", pattern=RUNTIME_PROJECT_ID),
                        token: str | None = Header(default=None, alias="X-Svc-Runtime-Token"),
                        ) -> schemas.MailLogEntry:
    workers.check_runtime_token(ctx, token)
    row = await runtime.reply(uow, project_id, mail_id, await request.body())
    return service.entry_view(row)
