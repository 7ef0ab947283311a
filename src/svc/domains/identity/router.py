"""HTTP only: dev login, /v1/me, /v1/config."""

from __future__ import annotations

from svc.adapters.idp.settings import IdpSettings
from svc.auth.principal import CurrentPrincipal
from svc.deps import Ctx, Uow, api_router
from svc.domains.identity import schemas, service
from svc.domains.identity.settings import IdentitySettings
from svc.domains.orgs import service as orgs

router = api_router(tags=["identity"])
dev_router = api_router(tags=["identity"])


@dev_router.post("/v1/auth/dev/login", response_model=schemas.Session, operation_id="devLogin")
async def dev_login(body: schemas.DevLogin, uow: Uow, ctx: Ctx) -> schemas.Session:
    days = ctx.settings_of(IdentitySettings).session_days
    user, token, row = await service.sign_in(uow, provider="dev", subject=body.subject, email=body.email,
                                             name=body.name, session_days=days)
    return schemas.Session(token=token, expires_at=row.expires_at, user_id=user.id, subject=user.subject)


@router.get("/v1/config", response_model=schemas.Config, operation_id="getConfig")
async def get_config(ctx: Ctx) -> schemas.Config:
    s = ctx.settings
    return schemas.Config(service_name=s.service_name, public_url=s.public_url, api_url=s.public_url,
                          app_domain=s.app_domain, identity_provider=ctx.settings_of(IdpSettings).idp_provider,
                          ssh_port=ctx.adapters.git.ssh_port if ctx.adapters.git is not None else None,
                          smtp_port=ctx.adapters.smtp.port if ctx.adapters.smtp is not None else None)


@router.get("/v1/me", response_model=schemas.Me, operation_id="getMe")
async def get_me(principal: CurrentPrincipal, uow: Uow, ctx: Ctx) -> schemas.Me:
    memberships = await orgs.memberships_of(uow, principal.user, ctx.config)
    return schemas.Me(user=schemas.User.model_validate(principal.user), orgs=memberships)
