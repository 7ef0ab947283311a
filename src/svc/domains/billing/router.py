"""HTTP only: an org's billing, and the provider's webhook (`/v1/hooks/polar`)."""

from __future__ import annotations

from fastapi import Request

from svc.adapters.billing.settings import BillingProviderSettings
from svc.auth.roles import AdminAccess, ViewerAccess
from svc.deps import Uow, api_router
from svc.domains.billing import deliveries, errors, schemas, service
from svc.errors import BadRequest
from svc.kit.webhook_signatures import WebhookVerificationError, verify
from svc.uow import runs

router = api_router(tags=["billing"])

_ERROR = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
# The routes that ask the provider.
_PROVIDER: dict[int | str, dict[str, object]] = {
    501: {"description": "Billing is not configured on this svc (billing_off)", "content": _ERROR},
    502: {"description": "The billing provider did not answer (billing_unavailable)", "content": _ERROR}}

_BILLING = "/v1/orgs/{orgSlug}/billing"


@router.get(_BILLING, response_model=schemas.BillingStatus, operation_id="getBilling")
async def get_billing(access: ViewerAccess, uow: Uow) -> schemas.BillingStatus:
    return await service.status(uow, access)


@router.post(_BILLING + "/checkout", response_model=schemas.UrlAnswer, operation_id="startCheckout",
             responses=_PROVIDER,
             summary="The provider's checkout page for the pro plan (the plan changes with its webhook)")
@runs(service.checkout)
async def checkout(body: schemas.CheckoutRequest, access: AdminAccess, uow: Uow) -> schemas.UrlAnswer:
    return schemas.UrlAnswer(url=await service.checkout(uow, access, body.return_to))


@router.post(_BILLING + "/portal", response_model=schemas.UrlAnswer, operation_id="openBillingPortal",
             responses=_PROVIDER, summary="A one-time link to the provider's customer portal")
@runs(service.portal)
async def portal(body: schemas.PortalRequest, access: AdminAccess, uow: Uow) -> schemas.UrlAnswer:
    return schemas.UrlAnswer(url=await service.portal(uow, access, body.return_to))


@router.post(_BILLING + "/session", response_model=schemas.SessionAnswer, operation_id="createBillingSession",
             responses=_PROVIDER)
@runs(service.customer_session)
async def session(access: AdminAccess, uow: Uow) -> schemas.SessionAnswer:
    token, expires = await service.customer_session(uow, access)
    return schemas.SessionAnswer(token=token, expires_at=expires)


@router.post(_BILLING + "/cancel", response_model=schemas.BillingStatus, operation_id="cancelSubscription",
             responses=_PROVIDER, summary="Cancel at the end of the period (cancel true), or reverse that (false)")
@runs(service.cancel)
async def cancel(body: schemas.CancelRequest, access: AdminAccess, uow: Uow) -> schemas.BillingStatus:
    return await service.cancel(uow, access, body.cancel)


@router.post("/v1/hooks/polar", response_model=schemas.WebhookAnswer, operation_id="billingWebhook",
             summary="The billing provider's webhook (Standard Webhooks signature)",
             responses={403: {"description": "The signature does not verify (bad_signature)", "content": _ERROR},
                        501: {"description": "Billing is not configured on this svc (billing_off)",
                              "content": _ERROR}})
async def polar_webhook(request: Request, uow: Uow) -> schemas.WebhookAnswer:
    settings, billing = uow.ctx.settings_of(BillingProviderSettings), uow.ctx.adapters.billing
    secret = (billing.webhook_secret if billing is not None else None) or settings.billing_webhook_secret
    if billing is None or secret is None:
        raise errors.BillingOff()
    body = await request.body()
    try:
        # The key is the secret as its form reads it (Polar's UTF-8, Standard Webhooks' base64, or
        # either); the timestamp is checked too (5 minutes either way), then the body's JSON read.
        payload = verify(secret.get_secret_value(), settings.billing_webhook_secret_form, body, request.headers)
    except WebhookVerificationError:
        raise errors.BadSignature() from None
    except (ValueError, UnicodeDecodeError):
        raise BadRequest("The body is not valid JSON") from None
    if not isinstance(payload, dict):
        raise BadRequest("The body must be a JSON object")
    # Written with the deliveries waiting at the same time, in one transaction (deliveries.py).
    writer = deliveries.writer_of(request.app, uow.ctx)
    return schemas.WebhookAnswer(applied=await writer.deliver(request.headers["webhook-id"], payload))
