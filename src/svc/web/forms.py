"""Form posts read through the API's own request models, so a field is checked by the same rule
and refused in the same words in the dashboard as in the API; and the one way a page shows a
refused change in its form (errors next to their fields, what was typed kept):

    try:
        body = parse(schemas.RRsetPut, {...})
        async with refusable(uow):                  # a savepoint: a refusal leaves nothing behind
            saved = await service.put_rrset(uow, ...)
    except AppError as err:
        problem = refusal(request, err, fields={"records": "Records"}, lines={"records": numbers})
        return refused(problem, lambda reading: render the form again with `problem`)

The route's unit of work then ends (its write transaction, holding nothing of the change, commits
at once), and web/routing.py renders the form in a read unit of work of its own: a page that asks
a slow system (the nameserver) is never waited on with the store locked."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from fastapi import Request, Response
from pydantic import BaseModel, ValidationError

from svc.errors import AppError, BadRequest, validation_entry
from svc.uow import UnitOfWork
from svc.web.render import dashboard_of
from svc.web.session import CSRF_FIELD
from svc.web.words import Said, say

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
    """A change whose refusal the page shows in its form rather than as an error page: it runs in
    a savepoint, so a refused change leaves nothing behind."""
    async with uow.session.begin_nested():
        yield


@dataclass(frozen=True)
class Refusal:
    """A refused change as its form shows it: sentences by field, next to each field (`errors`), or
    else the error in words at the form's top (`said`); the page answers with `status`."""

    status: int
    errors: dict[str, list[str]] = field(default_factory=dict)
    said: Said | None = None


def refusal(request: Request, err: AppError, *, fields: Mapping[str, str],
            lines: Mapping[str, Sequence[int]] | None = None, at: Mapping[str, str] | None = None) -> Refusal:
    """`err` by the form's fields. `fields` names each field as the form labels it ("name" ->
    "Hostname"): "name must not be a wildcard" is said "Hostname must not be a wildcard" under it.
    `lines` gives a textarea's line numbers: "records.2 is not a valid A record" is said "Line 4 is
    not a valid A record" when its third item was typed on line 4. `at` puts an error code under a
    field (a name already taken), with its hint. Anything else is said at the form's top."""
    said = say(err, dashboard_of(request).hints)
    if at and err.code in at:
        return Refusal(err.status, {at[err.code]: [said.message + "." + (f" {said.hint}" if said.hint else "")]})
    found: dict[str, list[str]] = {}
    entries = (err.details or {}).get("errors") if err.status == 400 else None
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        name = str(entry.get("field", ""))
        message = str(entry.get("message", ""))
        head, _, index = name.partition(".")
        if head not in fields:
            continue
        rest = message.removeprefix(name) if message.startswith(name) else " " + message
        if index.isdigit():
            numbers = (lines or {}).get(head) or []
            item = int(index)
            subject = f"Line {numbers[item]}" if item < len(numbers) else f"Line {item + 1}"
        else:
            subject = fields[head]
        found.setdefault(head, []).append(subject + rest)
    return Refusal(err.status, found) if found else Refusal(err.status, said=said)


class RefusedForm(Response):
    """What a page route answers when its change was refused: web/routing.py renders `show` once
    the route's unit of work has ended, in a read unit of work of its own (passed to `show`)."""

    def __init__(self, show: Callable[[UnitOfWork], Awaitable[Response]]) -> None:
        super().__init__(status_code=500)  # never sent as it is
        self.show = show


def refused(problem: Refusal, show: Callable[[UnitOfWork], Awaitable[Response]]) -> RefusedForm:
    """The form again, with `problem` (which `show` renders, with `problem.status`)."""
    return RefusedForm(show)
