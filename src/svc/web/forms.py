"""Form posts read through the API's own request models, so a field is checked by the same rule
and refused in the same words in the dashboard as in the API."""

from __future__ import annotations

from typing import Any, TypeVar

from fastapi import Request
from pydantic import BaseModel, ValidationError

from svc.errors import BadRequest, validation_entry
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
