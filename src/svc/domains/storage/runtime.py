"""A project's worker and its objects (docs/storage.md, "The worker: env.storage").

env.storage is a binding to the runtime's Storage entrypoint (adapters/workers/dispatcher.js),
given to a granted project's worker; its calls come back here over the runtime's own routes
(runtime_router.py, proved by the runtime's token), with the project named by svc in the
binding's props, never by the worker. They go through objects.py as the API's do: the grant, the
key's rules, the project's prefix and the quota apply the same, so a worker's key names its own
project's objects and no other's, whatever it holds."""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field

from svc.adapters.objects.port import Listing, ObjectInfo
from svc.adapters.workers.port import EntrypointBinding
from svc.context import AppContext
from svc.domains.storage import queries
from svc.errors import BadRequest
from svc.kit.api import ApiInput
from svc.kit.clock import rfc3339
from svc.kit.store_session import StoreSession
from svc.models import Project

BINDING = "__SVC_STORAGE__"
ENTRYPOINT = "Storage"

# R2's bounds: a list page and a delete of many keys hold at most 1,000.
MAX_KEYS = 1000


async def worker_env(session: StoreSession, ctx: AppContext, project: Project) -> dict[str, Any]:
    """env.storage for a granted project (the area's manifest declares it): a binding to the
    runtime's Storage entrypoint, which sends the worker's calls to svc's runtime routes. A grant or
    a revoke bumps the project's bindings generation: the running worker has it (or loses it) at
    its next request; a worker that kept it is refused by objects.py's grant check (not_granted)."""
    if await queries.grant(session, project.id) is None:
        return {}
    return {BINDING: EntrypointBinding(entrypoint=ENTRYPOINT, props={"project": project.id})}


class HeadRequest(ApiInput):
    key: str = Field(max_length=1024)


class ListRequest(ApiInput):
    prefix: str = Field(default="", max_length=1024)
    cursor: str | None = Field(default=None, max_length=2048)
    limit: int = Field(default=MAX_KEYS, ge=1, le=MAX_KEYS)
    delimiter: str | None = Field(default=None, min_length=1, max_length=16)


class DeleteRequest(ApiInput):
    keys: list[str] = Field(min_length=1, max_length=MAX_KEYS)


def object_view(info: ObjectInfo) -> dict[str, Any]:
    """An object as the wrapper's env.storage reads it (the API's object JSON)."""
    return {"key": info.key, "size": info.size, "etag": info.etag, "uploadedAt": rfc3339(info.uploaded),
            "contentType": info.content_type}


def listing_view(listing: Listing) -> dict[str, Any]:
    return {"objects": [object_view(o) for o in listing.objects], "prefixes": listing.prefixes,
            "nextCursor": listing.cursor}


_RANGE = re.compile(r"bytes=(\d{0,19})-(\d{0,19})")


def byte_range(header: str | None) -> tuple[int | None, int | None]:
    """get()'s range, as the Range header the wrapper writes of R2's {offset, length} or {suffix}:
    (start, end) inclusive, (None, n) for the last n bytes, (None, None) for the whole object."""
    if header is None:
        return None, None
    found = _RANGE.fullmatch(header.strip())
    if found is None or found[1] == found[2] == "":
        raise BadRequest.of_field("range", "must be bytes=a-b, bytes=a- or bytes=-n")
    start = int(found[1]) if found[1] else None
    end = int(found[2]) if found[2] else None
    if start is not None and end is not None and end < start:
        raise BadRequest.of_field("range", "must end at or after its start")
    return start, end
