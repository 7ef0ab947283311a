"""Object storage's bodies (decisions.md: StorageStatus; STORAGE.md: the object listing)."""

from __future__ import annotations

from pydantic import Field

from svc.kit.api import ApiModel, Timestamp

MAX_LIST = 1000


class StorageStatus(ApiModel):
    granted: bool
    prefix: str = Field(description="Where the project's objects lie in the object store (p/{projectId}/): the one "
                                    "its grant fixed, or the one a grant would fix (the same: it is the project's id)")
    quota_bytes: int = Field(description="What the project's objects may hold (its org's plan)")
    used_bytes: int = Field(description="What they hold: the last count of the store (every few minutes) plus "
                                        "svc's own writes since")


class ObjectView(ApiModel):
    key: str = Field(description="The project's key (without the prefix)")
    size: int
    etag: str
    uploaded_at: Timestamp
    content_type: str | None


class ObjectList(ApiModel):
    objects: list[ObjectView]
    prefixes: list[str] = Field(description="Keys ending at the delimiter below the prefix (when one was given)")
    next_cursor: str | None = Field(description="The next page's `cursor`; null at the end")
