"""What every route gets: its unit of work (svc/uow.py), opened and ended around it, and the context.

`UnitOfWorkRoute` runs the endpoint (its dependencies, body and handler) inside one unit of work,
so the commit happens before the response is sent (a failed commit is an error response, never a
2xx for a change that did not happen), an exception rolls everything back, and after-commit
effects (the edge converging) have run when the client hears back. The transaction policy is the
method's (GET/HEAD/OPTIONS read, the rest write) unless the endpoint runs a use case that declares
its own (`@runs(service.deploy)`, svc/uow.py).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, Request, Response
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from pydantic import BaseModel

from svc.context import AppContext
from svc.errors import BadRequest
from svc.kit.store_session import StoreSession
from svc.uow import Tx, UnitOfWork, policy_of

# Requests that change nothing: a read unit of work, the credential cache, no project-state check.
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

Endpoint = TypeVar("Endpoint", bound=Callable[..., Any])


def policy_of_route(route: APIRoute) -> Tx:
    default = Tx.READ if (route.methods or set()) <= READ_METHODS else Tx.WRITE
    return policy_of(route.endpoint, default)


_ANY_QUERY = "__svc_any_query__"


def any_query(endpoint: Endpoint) -> Endpoint:
    """An endpoint that takes query parameters it does not declare (an identity provider's callback
    carries what the provider adds: iss, session_state, ...)."""
    setattr(endpoint, _ANY_QUERY, True)
    return endpoint


def _query_names(dependant: Dependant) -> set[str]:
    """The query parameters a route declares, its dependencies' and query models' included."""
    names: set[str] = set()
    for param in dependant.query_params:
        annotation = param.field_info.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            names |= {info.alias or name for name, info in annotation.model_fields.items()}
        else:
            names.add(param.alias)
    for sub in dependant.dependencies:
        names |= _query_names(sub)
    return names


def unknown_query(route: APIRoute) -> Callable[[Request], None] | None:
    """For a documented /v1 route: a check that refuses a query parameter the route does not take
    (400 bad_request naming it: a misspelt `cursor` never silently answers the first page again)."""
    if not route.path.startswith("/v1/") or not route.include_in_schema or getattr(route.endpoint, _ANY_QUERY, False):
        return None
    allowed = frozenset(_query_names(route.dependant))

    def check(request: Request) -> None:
        query = request.scope.get("query_string", b"")
        if not query:
            return
        unknown = sorted(set(request.query_params) - allowed)
        if unknown:
            said = ", ".join(repr(name[:40]) for name in unknown[:5])
            takes = ", ".join(sorted(allowed)) or "none"
            raise BadRequest(f"Unknown query parameter {said}: this endpoint takes {takes}",
                             details={"unknown": unknown[:20], "allowed": sorted(allowed)})

    return check


class UnitOfWorkRoute(APIRoute):
    """Wraps the endpoint in its unit of work. Cheaper than a yield dependency, which costs an
    exit stack and a cancel scope per request. A documented /v1 route refuses query parameters it
    does not take, before anything runs."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        tx = policy_of_route(self)
        check_query = unknown_query(self)

        async def in_unit_of_work(request: Request) -> Response:
            if check_query is not None:
                check_query(request)
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
