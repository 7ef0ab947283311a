"""HTTP only: an org's domains (spec "Domains")."""

from __future__ import annotations

from fastapi import Header, Response

from svc.auth.roles import AdminAccess, MemberAccess, ViewerAccess
from svc.deps import Uow, api_router
from svc.domains.domain_names import saga, schemas, service
from svc.uow import runs

router = api_router(tags=["domains"])

_ERROR = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
_REGISTRAR: dict[int | str, dict[str, object]] = {
    502: {"description": "The registrar failed (registrar_error), or a purchase stopped midway (saga_incomplete): "
                         "send the same request again", "content": _ERROR},
    503: {"description": "No registrar is configured (registrar_not_configured)", "content": _ERROR}}
_PURCHASE: dict[int | str, dict[str, object]] = {
    **_REGISTRAR,
    402: {"description": "The registrar could not take the payment (payment_failed)", "content": _ERROR},
    409: {"description": "domain_taken (another org) or domain_unavailable (the registrar)", "content": _ERROR},
    422: {"description": "The registrar refused the input for good (registrar_rejected); any payment refunded",
          "content": _ERROR},
}

_DOMAINS = "/v1/orgs/{orgSlug}/domains"
_ONE = _DOMAINS + "/{name}"


@router.get(_DOMAINS, response_model=schemas.DomainList, operation_id="listDomains")
async def list_domains(access: ViewerAccess, uow: Uow) -> schemas.DomainList:
    return await service.list_domains(uow, access)


@router.post(_DOMAINS, response_model=schemas.Domain, status_code=201, operation_id="buyDomain", responses={
    **_PURCHASE, 200: {"description": "Already bought by this org (finished)", "model": schemas.Domain}},
    summary="Buy a domain: payment, registration, NS on svc's nameservers; a repeat request resumes")
@runs(saga.purchase)
async def buy(body: schemas.PurchaseRequest, access: AdminAccess, uow: Uow, response: Response) -> schemas.Domain:
    domain, created = await saga.purchase(uow, access, body)
    if not created:
        response.status_code = 200
    return domain


@router.post(_DOMAINS + "/check", response_model=schemas.CheckResults, operation_id="checkDomains",
             responses=_REGISTRAR, summary="Availability and prices, from the registrar")
@runs(service.check)
async def check(body: schemas.CheckRequest, access: MemberAccess, uow: Uow) -> schemas.CheckResults:
    return await service.check(uow, access, body.names)


@router.post(_DOMAINS + "/import", response_model=schemas.Domain, status_code=201, operation_id="importDomain",
             responses={200: {"description": "Already imported", "model": schemas.Domain}},
             summary="A domain registered elsewhere: its zone on svc's nameservers; no registrar call")
@runs(service.import_domain)
async def import_domain(body: schemas.ImportRequest, access: AdminAccess, uow: Uow, response: Response) \
        -> schemas.Domain:
    domain, created = await service.import_domain(uow, access, body.name)
    if not created:
        response.status_code = 200
    return domain


@router.get(_ONE, response_model=schemas.DomainDetail, operation_id="getDomain")
async def get_domain(name: str, access: ViewerAccess, uow: Uow) -> schemas.DomainDetail:
    return await service.detail(uow, access, name)


@router.post(_ONE + "/renew", response_model=schemas.Domain, operation_id="renewDomain", responses={
    **_PURCHASE, 409: {"description": "Another renewal of the domain is unfinished (request_in_progress), or the "
                                      "Idempotency-Key renewed another length (idempotency_key_reused)",
                       "content": _ERROR}},
    summary="Renew: charged once per request (its Idempotency-Key, or the renewal it continues)")
@runs(service.renew)
async def renew(name: str, body: schemas.RenewRequest, access: AdminAccess, uow: Uow, response: Response,
                idempotency_key: str | None = Header(default=None, alias="Idempotency-Key", min_length=1,
                                                     max_length=200)) -> schemas.Domain:
    domain, replayed = await service.renew(uow, access, name, body.years, request_key=idempotency_key)
    if replayed:
        response.headers["Idempotent-Replayed"] = "true"
    return domain


@router.post(_ONE + "/auto-renew", response_model=schemas.Domain, operation_id="setDomainAutoRenew",
             responses=_REGISTRAR)
@runs(service.set_auto_renew)
async def auto_renew(name: str, body: schemas.AutoRenewRequest, access: AdminAccess, uow: Uow) -> schemas.Domain:
    return await service.set_auto_renew(uow, access, name, body.enabled)


@router.post(_ONE + "/lock", response_model=schemas.Domain, operation_id="setDomainLock", responses=_REGISTRAR)
@runs(service.set_lock)
async def lock(name: str, body: schemas.LockRequest, access: AdminAccess, uow: Uow) -> schemas.Domain:
    return await service.set_lock(uow, access, name, body.locked)


@router.post(_ONE + "/auth-code", response_model=schemas.AuthCode, operation_id="getDomainAuthCode",
             responses=_REGISTRAR, summary="The code another registrar asks for a transfer out (never recorded)")
@runs(service.auth_code)
async def auth_code(name: str, access: AdminAccess, uow: Uow) -> schemas.AuthCode:
    return await service.auth_code(uow, access, name)


@router.post(_ONE + "/sync", response_model=schemas.Domain, operation_id="syncDomain", responses=_REGISTRAR)
@runs(service.sync)
async def sync(name: str, access: MemberAccess, uow: Uow) -> schemas.Domain:
    return await service.sync(uow, access, name)
