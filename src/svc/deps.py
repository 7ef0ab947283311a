"""Annotated dependencies the routers use: the context, a session per request, the caller."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncSession

from svc.context import AppContext

_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def get_context(request: Request) -> AppContext:
    ctx: AppContext = request.app.state.ctx
    return ctx


Ctx = Annotated[AppContext, Depends(get_context)]


async def get_session(request: Request) -> AsyncIterator[AsyncSession]:
    """One transaction per request: committed before the response is sent, rolled back on error."""
    ctx = get_context(request)
    async with ctx.db.transaction(write=request.method not in _READ_METHODS) as session:
        yield session


# scope="function": the commit runs before the response goes out, so a failed commit is an error
# response, never a 2xx for a change that did not happen.
Session = Annotated[AsyncSession, Depends(get_session, scope="function")]
