"""The object store's settings: where the projects' objects are kept (files or S3). The S3 one
reuses the blob store's S3 settings (endpoint, region, keys, and the bucket unless its own is set)."""

from __future__ import annotations

from svc.settings import ComponentSettings


class ObjectSettings(ComponentSettings):
    # Where the projects' objects (env.storage) are kept: "files" (under SVC_DATA_DIR/objects) or
    # "s3" (the endpoint, region and keys of SVC_S3_*).
    storage_backend: str = "files"
    # S3: the bucket of the projects' objects (keys `p/<project id>/...` at its root); unset: SVC_S3_BUCKET.
    storage_s3_bucket: str | None = None
