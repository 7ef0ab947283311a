"""What every route gets: its unit of work (svc/uow.py), opened and ended around it, and the context.

`UnitOfWorkRoute` runs the endpoint (its dependencies, body and handler) inside one unit of work,
so the commit happens before the response is sent (a failed commit is an error response, never a
2xx for a change that did not happen), an exception rolls everything back, and after-commit
effects (the edge converging) have run when the client hears back. The transaction policy is the
method's (GET/HEAD/OPTIONS read, the rest write) unless the endpoint declares its own with
`@transaction(Tx....)`.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, Request, Response
from fastapi.routing import APIRoute

from svc.context import AppContext
from svc.kit.store_session import StoreSession
from svc.uow import Tx, UnitOfWork

# Requests that change nothing: a read unit of work, the credential cache, no project-state check.
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

_TX_ATTRIBUTE = "__svc_tx__"
Endpoint = TypeVar("Endpoint", bound=Callable[..., Any])


def transaction(tx: Tx) -> Callable[[Endpoint], Endpoint]:
    """Declare an endpoint's transaction policy where its method's default is not right: a GET
    that writes (a sign-in callback), or an upload that reads, works outside, then writes."""

    def mark(endpoint: Endpoint) -> Endpoint:
        setattr(endpoint, _TX_ATTRIBUTE, tx)
        return endpoint

    return mark


def policy_of(route: APIRoute) -> Tx:
    declared: Tx | None = getattr(route.endpoint, _TX_ATTRIBUTE, None)
    if declared is not None:
        return declared
    return Tx.READ if (route.methods or set()) <= READ_METHODS else Tx.WRITE


class UnitOfWorkRoute(APIRoute):
    """Wraps the endpoint in its unit of work. Cheaper than a yield dependency, which costs an
    exit stack and a cancel scope per request."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        tx = policy_of(self)

        async def in_unit_of_work(request: Request) -> Response:
            uow = UnitOfWork(request.app.state.ctx, tx)
            request.state.uow = uow
            async with uow:
                return await handler(request)

        return in_unit_of_work


def api_router(**kwargs: Any) -> APIRouter:
    """The router every area uses: each route runs in one unit of work."""
    return APIRouter(route_class=UnitOfWorkRoute, **kwargs)


def request_uow(request: Request) -> UnitOfWork:
    uow: UnitOfWork = request.state.uow
    return uow


def request_session(request: Request) -> StoreSession:
    """The unit of work's session, for dependencies that already take the Request: one more
    dependency for FastAPI to solve on every request costs more than this."""
    return request_uow(request).session


async def get_context(request: Request) -> AppContext:
    ctx: AppContext = request.app.state.ctx
    return ctx


async def get_uow(request: Request) -> UnitOfWork:
    return request_uow(request)


Ctx = Annotated[AppContext, Depends(get_context)]
Uow = Annotated[UnitOfWork, Depends(get_uow)]
