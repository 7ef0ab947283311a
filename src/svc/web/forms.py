"""Form posts read through the API's own request models, so a field is checked by the same rule
and refused in the same words in the dashboard as in the API."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any, TypeVar

from fastapi import Request
from pydantic import BaseModel, ValidationError

from svc.errors import BadRequest, validation_entry
from svc.uow import UnitOfWork
from svc.web.session import CSRF_FIELD

Model = TypeVar("Model", bound=BaseModel)


async def fields(request: Request) -> dict[str, str]:
    """The form's text fields (the CSRF token left out); an empty field is absent."""
    form = await request.form()
    return {k: v for k, v in form.items() if isinstance(v, str) and k != CSRF_FIELD and v != ""}


def parse(model: type[Model], data: dict[str, Any]) -> Model:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        entries = [validation_entry(e) for e in exc.errors()[:20]]
        # A page lists every problem (the API's message names the first and points at details).
        message = "; ".join(dict.fromkeys(str(e["message"]) for e in entries)) or BadRequest.default_message
        raise BadRequest(message, details={"errors": entries}) from None


@contextlib.asynccontextmanager
async def refusable(uow: UnitOfWork) -> AsyncIterator[None]:
    """A change whose refusal the page shows in its form (the errors next to their fields, what
    was typed kept) rather than as an error page: it runs in a savepoint, so a refused change
    leaves nothing behind and the route's unit of work can still read the page again.

        try:
            async with refusable(uow):
                saved = await service.put_rrset(uow, ...)
        except AppError as err:
            return the form again with err's details.errors by field
    """
    async with uow.session.begin_nested():
        yield
