"""The blob store's settings: where artifacts are kept (files or S3)."""

from __future__ import annotations

from pydantic import SecretStr

from svc.settings import ComponentSettings


class BlobSettings(ComponentSettings):
    # Where artifacts are kept: "files" (under SVC_DATA_DIR/blobs) or "s3".
    blob_store: str = "files"
    # S3: the endpoint of an S3-compatible store (unset: AWS's).
    s3_endpoint_url: str | None = None
    # S3: the bucket.
    s3_bucket: str | None = None
    # S3: the prefix of svc's keys in the bucket.
    s3_prefix: str = "svc/"
    # S3: the region.
    s3_region: str = "us-east-1"
    # S3: the access key's id.
    s3_access_key_id: str | None = None
    # S3: the access key's secret.
    s3_secret_access_key: SecretStr | None = None
