"""Annotated dependencies the routers use: the context, a session per request, the caller.

Each request runs in one transaction, opened and committed by `TransactionalRoute` around the
endpoint, so the commit happens before the response is sent (a failed commit is an error
response, never a 2xx for a change that did not happen) and an exception rolls everything back.
GET/HEAD/OPTIONS get a read transaction; other methods a write transaction. The session itself
is only created here; the first query opens the connection.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.routing import APIRoute
from sqlalchemy.ext.asyncio import AsyncSession

from svc.context import AppContext

# Requests that change nothing: a read transaction, the credential cache, no project-state check.
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


async def get_context(request: Request) -> AppContext:
    ctx: AppContext = request.app.state.ctx
    return ctx


Ctx = Annotated[AppContext, Depends(get_context)]


class TransactionalRoute(APIRoute):
    """Wraps the endpoint (dependencies, body, handler) in the request's transaction. Cheaper than
    a yield dependency, which costs an exit stack and a cancel scope per request."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        write = not (self.methods or set()) <= READ_METHODS

        async def transactional(request: Request) -> Response:
            ctx: AppContext = request.app.state.ctx
            if not write and ctx.db.is_sqlite:
                # What db.transaction(write=False) does, without a generator-based context manager
                # around every GET (about 5% of a small read's cost).
                read_session = ctx.db.read()
                request.state.db_session = read_session
                try:
                    return await handler(request)
                finally:
                    await read_session.close()
            async with ctx.db.transaction(write=write) as session:
                request.state.db_session = session
                return await handler(request)

        return transactional


def api_router(**kwargs: Any) -> APIRouter:
    """The router every area uses: its routes run in one transaction per request."""
    return APIRouter(route_class=TransactionalRoute, **kwargs)


def request_session(request: Request) -> AsyncSession:
    """The request's session, for dependencies that already take the Request: a `Session`
    parameter there would be one more dependency for FastAPI to solve on every request."""
    session: AsyncSession = request.state.db_session
    return session


async def get_session(request: Request) -> AsyncSession:
    return request_session(request)


Session = Annotated[AsyncSession, Depends(get_session)]
