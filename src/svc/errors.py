"""One error type per failure, rendered once as the spec's Error envelope."""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
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


def _validation_details(exc: RequestValidationError) -> dict[str, Any]:
    # Only where and what: never echo the input, which may hold a password or secret.
    errors = []
    for e in exc.errors()[:20]:
        if e.get("type") == "json_invalid":  # FastAPI's loc is ("body", <offset>): name the body
            errors.append({"field": "body", "message": "The body is not valid JSON"})
            continue
        loc = [str(p) for p in e.get("loc", ()) if p != "body" or len(e.get("loc", ())) == 1]
        errors.append({"field": ".".join(loc), "message": str(e.get("msg", "invalid"))})
    return {"errors": errors}


def install_error_handlers(app: FastAPI) -> None:
    async def on_app_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, AppError)
        return error_response(exc)

    async def on_validation(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        details = _validation_details(exc)
        first = details["errors"][0] if details["errors"] else {"field": "", "message": "invalid"}
        where = f" ({first['field']})" if first["field"] else ""
        return error_response(BadRequest(f"{first['message']}{where}", details=details))

    async def on_http(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
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

    async def on_unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.error("unhandled error on %s %s: %s", request.method, request.url.path, type(exc).__name__,
                  exc_info=exc)
        return error_response(Internal())

    app.add_exception_handler(AppError, on_app_error)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(Exception, on_unexpected)
