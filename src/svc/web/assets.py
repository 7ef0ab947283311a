"""The dashboard's static files, served by svc itself (no CDN: it works offline and behind a
firewall). Ours are in static/; htmx and Pico come from npm (package.json) and `make setup` copies
them into static/vendor/. Each file is read once at start, with a gzip copy; its URL carries a hash
of its content (`asset("app.css")` -> /static/app.css?v=1a2b3c4d), so browsers keep it for a year
and a new svc version is fetched at once. The icon is also at /favicon.ico, where browsers ask for
it by themselves (the API docs, a page without a <link rel="icon">)."""

from __future__ import annotations

import gzip
import hashlib
import logging
import mimetypes
from dataclasses import dataclass
from pathlib import Path

from fastapi import APIRouter, Request, Response

log = logging.getLogger("svc.web")

STATIC_DIR = Path(__file__).parent / "static"
VENDOR_FILES = ("vendor/htmx.min.js", "vendor/pico.min.css")
_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml",
          ".ico": "image/x-icon"}
FAVICON = "favicon.ico"
# /favicon.ico has no version in its address: kept a month, then checked again by its ETag.
FAVICON_CACHE = "public, max-age=2592000"


@dataclass(frozen=True)
class Asset:
    body: bytes
    gzipped: bytes
    version: str
    media_type: str


class Assets:
    def __init__(self, root: Path = STATIC_DIR) -> None:
        self.files: dict[str, Asset] = {}
        for path in sorted(root.rglob("*")):
            if path.is_file() and not path.name.startswith("."):
                body = path.read_bytes()
                name = path.relative_to(root).as_posix()
                media = _TYPES.get(path.suffix) or mimetypes.guess_type(path.name)[0] or "application/octet-stream"
                self.files[name] = Asset(body, gzip.compress(body, 9, mtime=0),
                                         hashlib.sha256(body).hexdigest()[:10], media)
        missing = [name for name in VENDOR_FILES if name not in self.files]
        if missing:
            log.warning("dashboard assets missing (%s): pages show unstyled; `make setup` installs them",
                        ", ".join(missing))

    def url(self, name: str) -> str:
        asset = self.files.get(name)
        return f"/static/{name}?v={asset.version}" if asset else f"/static/{name}"

    def response(self, request: Request, name: str, *, cache: str | None = None) -> Response:
        """The file, gzipped when the browser takes it; `cache` overrides the Cache-Control (a
        versioned address is kept a year, an unversioned one checked each time)."""
        asset = self.files.get(name)
        if asset is None:
            return Response("Not found\n", status_code=404, media_type="text/plain")
        versioned = request.query_params.get("v") == asset.version
        kept = "public, max-age=31536000, immutable" if versioned else "no-cache"
        headers = {"Cache-Control": cache or kept,
                   "ETag": f'"{asset.version}"', "Vary": "Accept-Encoding", "X-Content-Type-Options": "nosniff"}
        if request.headers.get("if-none-match") == f'"{asset.version}"':
            return Response(status_code=304, headers=headers)
        body = asset.body
        if "gzip" in request.headers.get("accept-encoding", "") and len(asset.gzipped) < len(body):
            body = asset.gzipped
            headers["Content-Encoding"] = "gzip"
        return Response(body, media_type=asset.media_type, headers=headers)


def asset_router(assets: Assets) -> APIRouter:
    router = APIRouter(include_in_schema=False)

    @router.get("/static/{name:path}")
    async def static(request: Request, name: str) -> Response:
        return assets.response(request, name)

    @router.get("/favicon.ico")
    async def favicon(request: Request) -> Response:
        return assets.response(request, FAVICON, cache=FAVICON_CACHE)

    return router
