"""HTTP only: the mail provider's notifications, POST /v1/hooks/ses (SNS; events.py)."""

from __future__ import annotations

from fastapi import Request
from pydantic import Field

from svc.deps import Uow, api_router
from svc.domains.email import events
from svc.kit.api import ApiModel
from svc.uow import runs

router = api_router(tags=["email"])

_ERROR = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}


class HookAnswer(ApiModel):
    applied: bool = Field(description="Whether the notification changed the mail log (false: a duplicate, a "
                                      "message svc did not send, another event type, a subscription confirmed)")


@router.post("/v1/hooks/ses", response_model=HookAnswer, operation_id="mailProviderWebhook",
             summary="The mail provider's notifications (SNS: bounce, complaint, delivery; subscription confirmation)",
             openapi_extra={"requestBody": {"content": {"text/plain": {"schema": {"type": "string"}}}}},
             responses={400: {"description": "Not an SNS message", "content": _ERROR},
                        403: {"description": "Another topic, a certificate or subscribe URL off SNS's host, or a "
                                             "signature that does not verify", "content": _ERROR},
                        501: {"description": "SVC_MAIL_TOPIC is not set (mail_topic_unset)", "content": _ERROR},
                        502: {"description": "SNS did not answer (its certificate, the subscription's "
                                             "confirmation)", "content": _ERROR}})
@runs(events.receive)
async def ses_webhook(request: Request, uow: Uow) -> HookAnswer:
    # SNS sends JSON as text/plain: the body is read as it came, whatever its content type.
    return HookAnswer(applied=await events.receive(uow, await request.body()))
