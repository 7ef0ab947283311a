"""HTTP only: the edge's answer to ACME's HTTP-01 checks (`/.well-known/acme-challenge/<token>` on
any host, proxied by nginx). Public, as the CA calls it: the token is what the CA asked for, and
the answer is no secret (it is the token and the account key's thumbprint). Not in the OpenAPI
document."""

from __future__ import annotations

from fastapi import Path
from fastapi.responses import PlainTextResponse, Response

from svc.deps import Uow, api_router
from svc.domains.certificates import service

router = api_router(include_in_schema=False)


@router.get("/v1/edge/acme-challenge/{token}")
async def acme_challenge(uow: Uow, token: str = Path(pattern=r"^[A-Za-z0-9_-]{1,200}$")) -> Response:
    answer = await service.challenge_answer(uow, token)
    if answer is None:
        return PlainTextResponse("no such challenge", status_code=404)
    return PlainTextResponse(answer)
