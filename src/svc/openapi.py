"""The OpenAPI document at /v1/openapi.json, with the spec's schema names and the Error envelope,
and its interactive docs at /v1/docs.

FastAPI documents validation failures as 422 HTTPValidationError; svc answers them with 400 Error,
so the document is rewritten to say what the server really does.

The docs page is Swagger UI from the installed `swagger-ui-bundle` package, served by svc itself
under /v1/docs/assets/: it works without internet access, and its Content-Security-Policy lets it
load nothing from another host. That package's Swagger UI (4.15) reads OpenAPI 3.0 only, so the page
loads /v1/docs/openapi.json: the same document said in 3.0 terms (a nullable field as `nullable`
instead of `anyOf [..., {"type": "null"}]`). /v1/openapi.json (3.1) stays the document of record.
Neither the page nor what it loads is in the document."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import swagger_ui_bundle
from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from pydantic import BaseModel

from svc.errors import NotFound


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
    """The document (app.openapi), and the docs page with its assets."""
    _install_document(app)
    install_docs(app)


def _install_document(app: FastAPI) -> None:
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
                if "HTTPValidationError" in str(responses.get("422", "")):
                    responses.pop("422")  # FastAPI's own; a 422 a route states (registrar_rejected) stays
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


# --- /v1/docs: Swagger UI, from the swagger-ui-bundle package, nothing from another host ---

DOCS_URL = "/v1/docs"
DASHBOARD_DOCS_URL = "/docs"
DOCS_ASSETS = "/v1/docs/assets"
DOCS_DOCUMENT = "/v1/docs/openapi.json"
_ASSET_DIR = Path(swagger_ui_bundle.swagger_ui_path)
# What the page loads (and the source maps the bundle names, for a browser's developer tools);
# the package's other files (a demo index.html that loads a pet store from the internet) are not served.
_ASSETS = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui-bundle.js.map": "application/json",
    "swagger-ui.css": "text/css; charset=utf-8",
    "swagger-ui.css.map": "application/json",
    "favicon-32x32.png": "image/png",
}
_DOCS_CSP = ("default-src 'none'; script-src 'self' 'nonce-{nonce}'; style-src 'self' 'unsafe-inline'; "
             "img-src 'self' data:; connect-src 'self'; font-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
             "form-action 'none'")


def install_docs(app: FastAPI) -> None:
    as_30: dict[str, Any] = {}

    @app.get(DOCS_URL, include_in_schema=False)
    async def docs() -> HTMLResponse:
        page = get_swagger_ui_html(
            openapi_url=DOCS_DOCUMENT, title=f"{app.title}: docs",
            swagger_js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js", swagger_css_url=f"{DOCS_ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{DOCS_ASSETS}/favicon-32x32.png",
            swagger_ui_parameters={"validatorUrl": None})  # no badge fetched from validator.swagger.io
        nonce = secrets.token_urlsafe(16)
        # The page's one inline script (Swagger UI's start) runs by the nonce; nothing else inline does.
        body = bytes(page.body).decode().replace("<script>", f'<script nonce="{nonce}">')
        return HTMLResponse(body, headers={
            "Content-Security-Policy": _DOCS_CSP.format(nonce=nonce), "Cache-Control": "no-cache",
            "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff"})

    # The dashboard's "API docs" link: the same page at the short address.
    app.add_api_route(DASHBOARD_DOCS_URL, docs, include_in_schema=False, methods=["GET"])

    @app.get(DOCS_DOCUMENT, include_in_schema=False)
    async def docs_document() -> JSONResponse:
        if not as_30:
            as_30.update(openapi_30(app.openapi()))
        return JSONResponse(as_30, headers={"Cache-Control": "no-cache"})

    @app.get(DOCS_ASSETS + "/{name}", include_in_schema=False)
    async def docs_asset(name: str) -> FileResponse:
        media_type = _ASSETS.get(name)
        if media_type is None:
            raise NotFound("No such file of the API docs")
        return FileResponse(_ASSET_DIR / name, media_type=media_type, headers={
            "Cache-Control": "public, max-age=86400", "X-Content-Type-Options": "nosniff"})


_NULL = {"type": "null"}
# Maps whose keys are names (of properties, of component schemas), never keywords.
_NAMED = frozenset({"properties", "schemas", "$defs", "patternProperties"})


def openapi_30(doc: dict[str, Any]) -> dict[str, Any]:
    """The 3.1 document FastAPI builds, in the OpenAPI 3.0 terms Swagger UI 4 reads. Only what
    svc's documents use: `anyOf`/`oneOf` with a `{"type": "null"}` member and a bare
    `{"type": "null"}` become `nullable`; `const` becomes a one-value `enum`; a schema's `examples`
    list becomes `example`. Names (of properties, of schemas) are never taken for keywords."""
    converted: dict[str, Any] = _schema_30(doc)
    converted["openapi"] = "3.0.3"
    converted.pop("jsonSchemaDialect", None)
    converted.pop("webhooks", None)
    return converted


def _schema_30(node: Any) -> Any:
    if isinstance(node, list):
        return [_schema_30(v) for v in node]
    if not isinstance(node, dict):
        return node
    node = dict(node)
    nullable = False
    for key in ("anyOf", "oneOf"):
        alternatives = node.get(key)
        if isinstance(alternatives, list) and _NULL in alternatives:
            rest = [a for a in alternatives if a != _NULL]
            del node[key]
            nullable = True
            if len(rest) == 1:  # the usual `X | None`: X itself, nullable (a $ref takes no siblings in 3.0)
                only = rest[0]
                node = {**({"allOf": [only]} if isinstance(only, dict) and "$ref" in only else only), **node}
            elif rest:
                node[key] = rest
    out = {k: ({name: _schema_30(s) for name, s in v.items()} if k in _NAMED and isinstance(v, dict)
               else _schema_30(v)) for k, v in node.items()}
    if out.get("type") == "null":
        del out["type"]
        out["enum"] = [None]
        nullable = True
    elif isinstance(out.get("type"), list) and "null" in out["type"]:
        types = [t for t in out["type"] if t != "null"]
        out["type"] = types[0] if len(types) == 1 else types
        nullable = True
    if "const" in out:
        out["enum"] = [out.pop("const")]
    if isinstance(out.get("examples"), list):  # a schema's list (a media type's or parameter's is a map)
        examples = out.pop("examples")
        if examples:
            out["example"] = examples[0]
    if nullable:
        out["nullable"] = True
    return out
