"""A project's worker and its objects (docs/storage.md, "The worker: env.storage").

env.storage is a binding to the runtime's Storage entrypoint (adapters/workers/dispatcher.js),
given to a granted project's worker; its calls come back here over the runtime's own routes
(runtime_router.py, proved by the runtime's token), with the project named by svc in the
binding's props, never by the worker. They go through objects.py as the API's do: the grant, the
key's rules, the project's prefix and the quota apply the same, so a worker's key names its own
project's objects and no other's, whatever it holds."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from svc.adapters.objects.port import Listing, ObjectInfo
from svc.adapters.workers.port import EntrypointBinding
from svc.context import AppContext
from svc.domains.storage import schemas, service
from svc.errors import BadRequest
from svc.kit.api import ApiInput
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
    if not await service.has_grant(session, project):
        return {}
    return {BINDING: EntrypointBinding(entrypoint=ENTRYPOINT, props={"project": project.id})}


class HeadRequest(ApiInput):
    key: str


class ListRequest(ApiInput):
    # Bounds and rules: objects.list's (one refusal for the API's listing and env.storage's).
    prefix: str = ""
    cursor: str | None = None
    limit: int = MAX_KEYS
    delimiter: str | None = None


class DeleteRequest(ApiInput):
    keys: list[str] = Field(min_length=1, max_length=MAX_KEYS)


def object_view(info: ObjectInfo) -> dict[str, Any]:
    """An object as the wrapper's env.storage reads it: the API's object JSON."""
    return schemas.ObjectView(key=info.key, size=info.size, etag=info.etag, uploaded_at=info.uploaded,
                              content_type=info.content_type).model_dump(mode="json", by_alias=True)


def listing_view(listing: Listing) -> dict[str, Any]:
    return {"objects": [object_view(o) for o in listing.objects], "prefixes": listing.prefixes,
            "nextCursor": listing.cursor}


def byte_range(offset: int | None, length: int | None, suffix: int | None) -> tuple[int | None, int | None]:
    """get()'s range in R2's terms ({offset, length}, {offset}, {suffix}) as objects.get takes it:
    (start, end) inclusive, (None, n) for the last n bytes, (None, None) for the whole object."""
    if suffix is not None:
        if offset is not None or length is not None:
            raise BadRequest.of_field("suffix", "is given alone, without offset or length")
        return None, suffix
    if offset is None and length is None:
        return None, None
    start = offset or 0
    return start, (start + length - 1 if length is not None else None)
