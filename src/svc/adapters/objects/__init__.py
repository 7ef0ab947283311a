"""The projects' object store: files under SVC_DATA_DIR/objects, or an S3-compatible bucket (port.py)."""

from __future__ import annotations

from svc.adapters.blobs.settings import BlobSettings
from svc.adapters.objects.port import ObjectStore
from svc.adapters.objects.settings import ObjectSettings
from svc.settings import Config


def build_object_store(config: Config) -> ObjectStore:
    """The store SVC_STORAGE_BACKEND names: "files" (default) or "s3" (the bucket of
    SVC_STORAGE_S3_BUCKET, else SVC_S3_BUCKET, reached with the blob store's S3 settings)."""
    settings = config.settings_of(ObjectSettings)
    if settings.storage_backend == "files":
        from svc.adapters.objects.files import FileObjectStore

        return FileObjectStore(config.settings.data_dir / "objects")
    if settings.storage_backend == "s3":
        s3 = config.settings_of(BlobSettings)
        bucket = settings.storage_s3_bucket or s3.s3_bucket
        if not bucket:
            raise ValueError("SVC_STORAGE_BACKEND=s3 needs SVC_STORAGE_S3_BUCKET or SVC_S3_BUCKET")
        from svc.adapters.objects.s3 import S3ObjectStore

        secret = s3.s3_secret_access_key
        return S3ObjectStore(bucket=bucket, endpoint_url=s3.s3_endpoint_url, region=s3.s3_region,
                             access_key_id=s3.s3_access_key_id,
                             secret_access_key=secret.get_secret_value() if secret else None)
    raise ValueError(f"SVC_STORAGE_BACKEND must be 'files' or 's3', not {settings.storage_backend!r}")
