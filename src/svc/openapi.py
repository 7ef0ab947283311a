"""The OpenAPI document at /v1/openapi.json, with the spec's schema names and the Error envelope.

FastAPI documents validation failures as 422 HTTPValidationError; svc answers them with 400 Error,
so the document is rewritten to say what the server really does."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel


class Error(BaseModel):
    """Every non-2xx response body."""

    code: str
    message: str
    details: dict[str, Any] | None = None


_ERROR_REF = {"$ref": "#/components/schemas/Error"}
_ERROR_STATUSES = {
    "400": "Bad input (bad_request or a specific code)",
    "401": "Not signed in (unauthorized)",
    "403": "Insufficient role (forbidden)",
    "404": "Missing, or not visible to the caller (not_found)",
    "409": "Conflict a retry will not fix",
}


def install_openapi(app: FastAPI) -> None:
    def build() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        doc = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
        schemas = doc.setdefault("components", {}).setdefault("schemas", {})
        schemas.pop("HTTPValidationError", None)
        schemas.pop("ValidationError", None)
        schemas["Error"] = Error.model_json_schema(ref_template="#/components/schemas/{model}")
        for path, item in doc.get("paths", {}).items():
            for method, op in item.items():
                if not isinstance(op, dict):
                    continue
                responses = op.setdefault("responses", {})
                responses.pop("422", None)
                needs_auth = not _is_public(path, method)
                for status, text in _ERROR_STATUSES.items():
                    if status in ("401", "403") and not needs_auth:
                        continue
                    responses.setdefault(status, {
                        "description": text, "content": {"application/json": {"schema": _ERROR_REF}}})
        app.openapi_schema = doc
        return doc

    app.openapi = build  # type: ignore[method-assign]


_PUBLIC = {("post", "/v1/auth/dev/login"), ("get", "/v1/config"), ("get", "/v1/invites/{token}")}


def _is_public(path: str, method: str) -> bool:
    return (method, path) in _PUBLIC or path.startswith("/v1/auth/")
