"""AI's failures: one type each (the gateway's are what a worker's env.ai call meets)."""

from __future__ import annotations

from svc.errors import AppError, BadRequest, Conflict, Forbidden, NotFound, ServiceUnavailable


class UnknownModel(BadRequest):
    code = "unknown_model"
    default_message = "The model is not in this svc's catalog (GET /v1/ai/models): there is no pass-through"


class NotGranted(Forbidden):
    code = "ai_not_granted"
    default_message = "This project may not call env.ai: an org member grants it (POST .../ai)"


class NotDeclared(Forbidden):
    code = "ai_not_declared"
    default_message = "The live deployment's svc.json does not declare \"ai\": true"


class OverCap(AppError):
    """A cap over time (calls a minute, spend a day): the same call may pass later."""

    status = 429
    code = "ai_cap_exceeded"
    default_message = "The call would pass one of the project's AI caps"


class OverCallCap(BadRequest):
    """A cap on one call (maxInputTokens, maxOutputTokens): the same call never passes, so a 400."""

    code = "ai_cap_exceeded"
    default_message = "The call asks for more than one of the project's AI caps allows a call"


class Unbounded(BadRequest):
    code = "ai_unbounded_request"
    default_message = "The call asks for something whose cost svc cannot bound before the call"


class InsufficientCredit(AppError):
    status = 402
    code = "insufficient_credit"
    default_message = "The org's AI credit does not cover this call's worst case: buy credit to go on"


class Unavailable(ServiceUnavailable):
    code = "ai_unavailable"
    default_message = "This svc has no upstream for the model's lane (SVC_AI_FRONTIER_URL/_KEY, SVC_AI_VALUE_URL/_KEY)"


class UpstreamFailed(AppError):
    status = 502
    code = "ai_upstream_error"
    default_message = "The model's provider failed; nothing was charged"


class ProjectGone(NotFound):
    default_message = "No such project"


class NoPaymentMethod(Conflict):
    code = "no_payment_method"
    default_message = ("No payment method is stored for this org: buy credit once (svc ai topup), then turn auto "
                       "top-up on")


class OrderNotUnsettled(Conflict):
    code = "order_not_unsettled"
    default_message = "That order is no paid order of this org's refused and unsettled"


class ModelStopped(ServiceUnavailable):
    code = "ai_model_stopped"
    default_message = ("svc stopped lending to this model: its provider billed a call more than svc held for it, so "
                       "its cost cannot be bounded until the operator corrects its estimate and resumes it")
