"""Content-addressed artifact storage: files under SVC_DATA_DIR/blobs, or an S3-compatible store."""

from __future__ import annotations

from svc.adapters.blobs.port import BlobStore
from svc.adapters.blobs.settings import BlobSettings
from svc.settings import Config


def build_blob_store(config: Config) -> BlobStore:
    """The store `SVC_BLOB_STORE` names: "files" (default) or "s3" (needs SVC_S3_BUCKET)."""
    settings = config.settings_of(BlobSettings)
    if settings.blob_store == "files":
        from svc.adapters.blobs.files import FileBlobStore

        return FileBlobStore(config.settings.data_dir / "blobs")
    if settings.blob_store == "s3":
        if not settings.s3_bucket:
            raise ValueError("SVC_BLOB_STORE=s3 needs SVC_S3_BUCKET")
        from svc.adapters.blobs.s3 import S3BlobStore

        secret = settings.s3_secret_access_key
        return S3BlobStore(bucket=settings.s3_bucket, prefix=settings.s3_prefix, endpoint_url=settings.s3_endpoint_url,
                           region=settings.s3_region, access_key_id=settings.s3_access_key_id,
                           secret_access_key=secret.get_secret_value() if secret else None)
    raise ValueError(f"SVC_BLOB_STORE must be 'files' or 's3', not {settings.blob_store!r}")
