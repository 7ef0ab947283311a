"""One error type per failure, rendered once as the spec's Error envelope."""

from __future__ import annotations

import logging
import re
from typing import Any, ClassVar, Self

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic_core import PydanticKnownError
from starlette.exceptions import HTTPException as StarletteHTTPException

log = logging.getLogger("svc.errors")


class AppError(Exception):
    status: ClassVar[int] = 500
    code: ClassVar[str] = "internal"
    default_message: ClassVar[str] = "Internal error"

    def __init__(self, message: str | None = None, *, details: dict[str, Any] | None = None,
                 headers: dict[str, str] | None = None) -> None:
        self.message = message or self.default_message
        self.details = details
        self.headers = headers
        super().__init__(self.message)


class BadRequest(AppError):
    status = 400
    code = "bad_request"
    default_message = "The request is not valid"

    @classmethod
    def of_field(cls, field: str, predicate: str, reason: str = "value_error") -> Self:
        """A field breaking a rule only the service knows, refused like every validation failure:
        details.errors holds the field, a machine reason and a sentence naming the field ("name
        must not be a wildcard"), never the input."""
        message = f"{field} {predicate}"
        return cls(message, details={"errors": [{"field": field, "reason": reason, "message": message}]})


class Unauthorized(AppError):
    status = 401
    code = "unauthorized"
    default_message = "Sign-in required: send a valid token as 'Authorization: Bearer <token>'"


class SessionRequired(AppError):
    status = 401
    code = "session_required"
    default_message = "This needs a session token; a personal access token cannot do it"


class Forbidden(AppError):
    status = 403
    code = "forbidden"
    default_message = "Your role in this org does not allow this"


class TokenReadOnly(Forbidden):
    code = "token_read_only"
    default_message = ("This token is read-only: it can look (GET) but not change anything; use a token "
                       "without the read-only limit, or a login session, to make changes")


class TokenProjectLimited(Forbidden):
    code = "token_project_limited"
    default_message = ("This token is limited to one project: it cannot act on other projects or orgs, "
                       "nor change anything outside its project")


class NotFound(AppError):
    status = 404
    code = "not_found"
    default_message = "Not found"


class MethodNotAllowed(AppError):
    status = 405
    code = "method_not_allowed"
    default_message = "Method not allowed"


class Conflict(AppError):
    status = 409
    code = "conflict"
    default_message = "Conflict"


class RateLimited(AppError):
    status = 429
    code = "rate_limited"
    default_message = "Too many requests"


class Internal(AppError):
    status = 500
    code = "internal"
    default_message = "Internal error"


class ServiceUnavailable(AppError):
    status = 503
    code = "unavailable"
    default_message = "A dependency is not available"


_STATUS_CODES: dict[int, type[AppError]] = {
    400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound, 405: MethodNotAllowed,
    429: RateLimited, 500: Internal, 503: ServiceUnavailable,
}


def envelope(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"code": code, "message": message, "details": details}


def error_response(err: AppError) -> JSONResponse:
    return JSONResponse(envelope(err.code, err.message, err.details), status_code=err.status,
                        headers=err.headers)


# --- validation failures: plain sentences, the field, a machine reason, the constraint values ---

# Where a parameter outside the body came from, as the sentence names it.
_PLACES = {"query": "The query parameter", "path": "The path parameter", "header": "The header",
           "cookie": "The cookie"}
# Constraint values pydantic reports (its error context) -> the JSON Schema names the entry carries.
_CONSTRAINTS = {"min_length": "minLength", "max_length": "maxLength", "pattern": "pattern", "ge": "minimum",
                "gt": "exclusiveMinimum", "le": "maximum", "lt": "exclusiveMaximum", "multiple_of": "multipleOf"}
_ITEM_CONSTRAINTS = {"min_length": "minItems", "max_length": "maxItems"}
# Phrases that complete "<subject> ..." as they stand; a validator's message starting otherwise is
# joined with a colon ("not ..." gets an "is").
_PREDICATES = ("must ", "is ", "are ", "has ", "cannot ", "may ", "should ", "does ", "contains ")
_MAX_SEGMENT = 64
# The patterns request fields and parameters state, in words (tests/api check that every pattern in
# the OpenAPI document has its words here, or a validator of its own that says it: kit/names.py).
PATTERN_WORDS = {
    r"^[^@\s]+@[^@\s]+\.[^@\s]+$": "must be an email address such as name@example.com",
    r"^[A-Z][A-Z0-9_]{0,63}$": "must be an uppercase letter followed by up to 63 of A-Z, 0-9 and _",
    r"^[A-Za-z0-9_]+$": "may hold only letters, digits and _",
    r"^[1-9][0-9]{0,5}[smhd]$": "must be a number and a unit, s, m, h or d (30s, 10m, 2h, 7d)",
    r"^[A-Za-z0-9._:-]{1,64}$": "must be a request id, or its end as shown: 1 to 64 of letters, digits and . _ : -",
    # A recipient of mail a project sends (domains/email/schemas.py; email-validator decides the rest).
    r"^[A-Za-z0-9_+-]+(\.[A-Za-z0-9_+-]+)*@([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}$":
        "must be an email address such as name@example.com (ASCII letters, digits, _ + - and dots)",
    # The local part a project sends from (RFC 5322's dot-atom).
    r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$":
        "must be the part before the @ of an address: letters, digits and !#$%&'*+/=?^_`{|}~- with single dots "
        "between them",
    # The sign-in page's brand settings (domains/app_auth/schemas.py).
    r"^#[0-9a-fA-F]{6}$": "must be a colour as # and six hex digits, such as #1d4ed8",
    r"^https?://[^\s\"'<>]+$": "must be an http:// or https:// address, such as https://example.com/logo.png",
}


def _plural(n: object, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _allowed(ctx: dict[str, Any]) -> list[str]:
    """The values an enum or literal accepts, from pydantic's "'a', 'b' or 'c'" (its schema, not the input)."""
    expected = str(ctx.get("expected", ""))
    return re.findall(r"'([^']*)'", expected) or ([expected] if expected else [])


def _phrase(kind: str, ctx: dict[str, Any]) -> str | None:
    """What pydantic's own error of type `kind` says of the field, as a predicate; None: no phrase for it."""
    n_min, n_max = ctx.get("min_length"), ctx.get("max_length")
    if kind == "missing":
        return "is required"
    if kind == "extra_forbidden":
        return "is not a field this request accepts"
    if kind in ("string_type", "string_sub_type", "string_unicode"):
        return "must be a string"
    if kind == "string_too_short":
        return "must not be empty" if n_min == 1 else f"must be at least {_plural(n_min, 'character')}"
    if kind == "string_too_long":
        return f"must be at most {_plural(n_max, 'character')}"
    if kind == "too_short":
        return f"must have at least {_plural(n_min, 'item')}"
    if kind == "too_long":
        return f"must have at most {_plural(n_max, 'item')}"
    if kind == "string_pattern_mismatch":
        pattern = str(ctx.get("pattern"))
        return PATTERN_WORDS.get(pattern, f"is not in the accepted form: it must match {pattern}")
    if kind in ("int_type", "int_parsing", "int_from_float", "int_parsing_size"):
        return "must be a whole number"
    if kind in ("float_type", "float_parsing", "finite_number", "decimal_type", "decimal_parsing"):
        return "must be a number"
    if kind in ("bool_type", "bool_parsing"):
        return "must be true or false"
    bounds = {"greater_than_equal": ("at least", "ge"), "greater_than": ("greater than", "gt"),
              "less_than_equal": ("at most", "le"), "less_than": ("less than", "lt")}
    if kind in bounds:
        words, key = bounds[kind]
        return f"must be {words} {ctx.get(key)}"
    if kind in ("enum", "literal_error"):
        return "must be one of: " + ", ".join(_allowed(ctx))
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return "must be a JSON object"
    if kind in ("list_type", "tuple_type", "set_type", "frozen_set_type", "iterable_type"):
        return "must be a list"
    if kind == "none_required":
        return "must be null"
    return None


def _is_pydantic_wording(kind: str, ctx: dict[str, Any], msg: str) -> bool:
    """Whether `msg` is pydantic's own text for `kind` (else svc's validators wrote it for people)."""
    try:
        return bool(msg == PydanticKnownError(kind, ctx or None).message())  # type: ignore[arg-type]
    except (KeyError, TypeError, ValueError):
        return False


def _said_of(subject: str, text: str) -> str:
    text = text.strip().rstrip(".")
    if not text:
        return f"{subject} is not valid"
    if text.startswith(_PREDICATES):
        return f"{subject} {text}"
    if text.startswith("not "):
        return f"{subject} is {text}"
    return f"{subject}: {text}"


def _where(loc: tuple[Any, ...]) -> tuple[str, str]:
    """(field, subject): the field as details name it ("slug", "records.0", "query.limit") and how a
    sentence names it ("slug", "The body", "The query parameter limit"). Long keys are cut short."""
    parts = [str(p) if len(str(p)) <= _MAX_SEGMENT else str(p)[:_MAX_SEGMENT - 3] + "..." for p in loc]
    if parts == ["body"] or not parts:
        return "body", "The body"
    if parts[0] == "body":
        field = ".".join(parts[1:])
        return field, field
    field = ".".join(parts)
    place = _PLACES.get(parts[0])
    return field, f"{place} {'.'.join(parts[1:])}" if place and len(parts) > 1 else field


def validation_entry(error: Any) -> dict[str, Any]:
    """One of details.errors: {"field", "reason" (pydantic's error type), "message" (a sentence),
    constraint values}. Only where and what: never the input, which may be a password or secret."""
    kind = str(error.get("type", "value_error"))
    ctx = error.get("ctx") or {}
    msg = str(error.get("msg", ""))
    if kind == "json_invalid":  # FastAPI's loc is ("body", <offset>): name the body
        return {"field": "body", "reason": kind, "message": "The body is not valid JSON"}
    field, subject = _where(tuple(error.get("loc", ())))
    if kind in ("value_error", "assertion_error"):
        message = _said_of(subject, msg.removeprefix("Value error, ").removeprefix("Assertion failed, "))
    elif not _is_pydantic_wording(kind, ctx, msg):
        message = _said_of(subject, msg)  # svc's own validators (kit/api.py `invalid`) speak to people
    else:
        phrase = _phrase(kind, ctx)
        if kind == "missing" and subject == "The body":
            phrase = "is required: send a JSON object"
        elif phrase is None:  # a type svc's models do not use: pydantic's words, told of the field
            should = re.match(r"^\w+ should (.+)$", msg)
            phrase = f"must {should.group(1)}" if should else "is not valid"
        message = f"{subject} {phrase}"
    entry: dict[str, Any] = {"field": field, "reason": kind, "message": message}
    names = _ITEM_CONSTRAINTS if kind in ("too_short", "too_long") else _CONSTRAINTS
    for key, name in names.items():
        value = ctx.get(key)
        if isinstance(value, int | float | str) and not isinstance(value, bool):
            entry[name] = value
    if kind in ("enum", "literal_error") and _allowed(ctx):
        entry["allowed"] = _allowed(ctx)
    return entry


def _validation_details(exc: RequestValidationError) -> dict[str, Any]:
    return {"errors": [validation_entry(e) for e in exc.errors()[:20]]}


def validation_message(errors: list[dict[str, Any]]) -> str:
    """The envelope's message: the first problem's sentence (it names the field), and how many more."""
    if not errors:
        return BadRequest.default_message
    more = len(errors) - 1
    return str(errors[0]["message"]) + (f" (and {more} more: see details.errors)" if more else "")


def http_error_response(exc: StarletteHTTPException) -> JSONResponse:
    """The framework's own refusals (no such route, method not allowed, a malformed request) as the envelope."""
    cls = _STATUS_CODES.get(exc.status_code)
    if cls is None:
        cls = BadRequest if exc.status_code < 500 else Internal
    message = cls.default_message
    if exc.status_code == 404:
        message = "No such route"
    elif exc.status_code == 400 and isinstance(exc.detail, str) and exc.detail:
        message = exc.detail  # the framework's or svc's own words on a malformed request
    resp = error_response(cls(message))
    resp.status_code = exc.status_code
    for k, v in (exc.headers or {}).items():
        resp.headers[k] = v
    return resp


def install_error_handlers(app: FastAPI) -> None:
    async def on_app_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, AppError)
        return error_response(exc)

    async def on_validation(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        details = _validation_details(exc)
        return error_response(BadRequest(validation_message(details["errors"]), details=details))

    async def on_http(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        return http_error_response(exc)

    async def on_unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.error("unhandled error on %s %s: %s", request.method, request.url.path, type(exc).__name__,
                  exc_info=exc)
        return error_response(Internal())

    app.add_exception_handler(AppError, on_app_error)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(Exception, on_unexpected)
