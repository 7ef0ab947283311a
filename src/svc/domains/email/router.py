"""HTTP only: a project's email grant and its mail log (spec "Email")."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query, Response
from fastapi.responses import FileResponse
from starlette.background import BackgroundTask

from svc.auth.projects import ProjectAdmin, ProjectMember, ProjectViewer
from svc.deps import Uow, api_router
from svc.domains.email import outbound, records, schemas, service
from svc.uow import runs

_ERROR_BODY = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
# GET E and E/records answer 503 email_not_configured on a svc without a mail domain.
router = api_router(tags=["email"])

_E = "/v1/orgs/{orgSlug}/projects/{projectName}/email"


@router.get(_E, response_model=schemas.EmailStatus, operation_id="getEmail",
            responses={503: {"description": "No mail domain (email_not_configured)", "content": _ERROR_BODY}},
            summary="The project's address, whether it is granted, the plan's hourly cap and recent counts")
async def get_email(p: ProjectViewer, uow: Uow) -> schemas.EmailStatus:
    return await service.status(uow, p.access.org, p.project)


@router.post(_E, response_model=schemas.EmailStatus, operation_id="grantEmail",
             summary="Receive mail at the project's address and send from it; idempotent, no body")
@runs(service.grant)
async def grant_email(p: ProjectMember, uow: Uow) -> schemas.EmailStatus:
    return await service.grant(uow, p.access, p.project)


@router.delete(_E, status_code=204, operation_id="revokeEmail",
               summary="Stop mail in and out (mail to the address is refused with 550); the log is kept")
@runs(service.revoke)
async def revoke_email(p: ProjectAdmin, uow: Uow) -> Response:
    await service.revoke(uow, p.access, p.project)
    return Response(status_code=204)


@router.get(_E + "/log", response_model=schemas.MailLogPage, operation_id="listMail",
            summary="The mail log, newest first, paged by cursor")
async def list_mail(p: ProjectViewer, uow: Uow,
                    query: Annotated[schemas.MailLogQuery, Query()]) -> schemas.MailLogPage:
    return await service.log(uow, p.project, query)


@router.get(_E + "/log/{mailId}", response_model=schemas.MailLogEntry, operation_id="getMail")
async def get_mail(p: ProjectViewer, uow: Uow, mailId: str) -> schemas.MailLogEntry:
    return await service.entry(uow, p.project, mailId)


@router.get(_E + "/log/{mailId}/raw", operation_id="getMailRaw", response_class=FileResponse,
            summary="The raw message (message/rfc822), with the headers svc added to received mail",
            responses={200: {"content": {"message/rfc822": {}}}})
async def get_mail_raw(p: ProjectViewer, uow: Uow, mailId: str) -> FileResponse:
    path = await service.raw_message(uow, p.project, mailId)
    return FileResponse(path, media_type="message/rfc822", filename=f"{mailId}.eml",
                        background=BackgroundTask(path.unlink, missing_ok=True))


@router.post(_E + "/send", status_code=202, response_model=schemas.MailLogEntry, operation_id="sendMail",
             summary="Send a message from the project's address: signed, queued for the relay (outcome queued)",
             responses={429: {"description": "The plan's hourly cap is reached (rate_limited; Retry-After: seconds)",
                              "content": _ERROR_BODY}})
@runs(outbound.send)
async def send_mail(p: ProjectMember, uow: Uow, body: schemas.SendRequest) -> schemas.MailLogEntry:
    row = await outbound.send(uow, p.project, outbound.Outgoing(
        to=body.to, subject=body.subject, text=body.text, html=body.html, from_local=body.from_,
        reply_to=body.reply_to))
    return service.entry_view(row)


@router.get(_E + "/records", response_model=schemas.MailRecords, operation_id="getMailRecords",
            responses={503: {"description": "No mail domain (email_not_configured)", "content": _ERROR_BODY}},
            summary="The mail domain's DNS records (MX, SPF, DKIM, DMARC), and whether svc publishes them itself")
@runs(records.view)
async def get_mail_records(p: ProjectViewer, uow: Uow) -> schemas.MailRecords:
    return await records.view(uow)
