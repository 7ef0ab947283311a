"""Blobs in an S3-compatible store (AWS S3, MinIO, Ceph, moto's server in tests) through boto3.

boto3 is synchronous: every call runs in a worker thread. Objects are `<prefix><key>`. An upload
becomes visible only once complete (S3 semantics, multipart included); a download is written to
a temporary file and renamed, so the destination is complete or absent."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from svc.adapters.blobs.port import BlobMissing
from svc.kit.files import partial_name, remove_path

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

_MISSING = {"404", "NoSuchKey", "NotFound"}


class S3Bucket:
    """A bucket of an S3-compatible store, its client made on first use (building a boto3 client
    takes a while); boto3 clients are thread-safe. The object store's bucket is one too."""

    def __init__(self, *, bucket: str, prefix: str = "", endpoint_url: str | None = None,
                 region: str = "us-east-1", access_key_id: str | None = None,
                 secret_access_key: str | None = None) -> None:
        self.bucket = bucket
        self.prefix = prefix
        self.endpoint_url = endpoint_url
        self.region = region
        self._credentials = (access_key_id, secret_access_key)
        self._client: S3Client | None = None
        self._lock = threading.Lock()
        where = f" at {endpoint_url}" if endpoint_url else ""
        self.description = f"s3://{bucket}/{prefix}{where}"

    @property
    def client(self) -> S3Client:
        with self._lock:
            if self._client is None:
                self._client = _make_client(self.endpoint_url, self.region, *self._credentials)
            return self._client


class S3BlobStore(S3Bucket):

    def _key(self, key: str) -> str:
        if not key or key.startswith("/") or ".." in key.split("/"):
            raise ValueError(f"not a blob key: {key!r}")
        return self.prefix + key

    async def put_file(self, key: str, path: Path) -> None:
        if await self.exists(key):
            return  # content-addressed: the same key holds the same bytes
        await asyncio.to_thread(self.client.upload_file, str(path), self.bucket, self._key(key))

    async def exists(self, key: str) -> bool:
        def head() -> bool:
            try:
                self.client.head_object(Bucket=self.bucket, Key=self._key(key))
            except ClientError as e:
                if _code(e) in _MISSING:
                    return False
                raise
            return True

        return await asyncio.to_thread(head)

    async def get_to_file(self, key: str, dest: Path) -> None:
        def get() -> None:
            tmp = dest.with_name(partial_name("get"))
            try:
                try:
                    self.client.download_file(self.bucket, self._key(key), str(tmp))
                except ClientError as e:
                    if _code(e) in _MISSING:
                        raise BlobMissing(key) from None
                    raise
                os.replace(tmp, dest)
            finally:
                remove_path(tmp)

        await asyncio.to_thread(get)

    async def delete(self, key: str) -> None:
        await asyncio.to_thread(self.client.delete_object, Bucket=self.bucket, Key=self._key(key))

    def sweep_partials(self) -> int:
        """Nothing to sweep: an S3 PUT is whole or absent."""
        return 0


def _make_client(endpoint_url: str | None, region: str, access_key_id: str | None,
                secret_access_key: str | None) -> S3Client:
    """A boto3 S3 client: path-style with an endpoint, retrying."""
    extra: dict[str, Any] = {}
    if access_key_id and secret_access_key:
        extra = {"aws_access_key_id": access_key_id, "aws_secret_access_key": secret_access_key}
    # Path-style addressing works with every S3-compatible server.
    config = Config(s3={"addressing_style": "path"} if endpoint_url else {},
                    retries={"max_attempts": 5, "mode": "standard"})
    return boto3.session.Session().client("s3", endpoint_url=endpoint_url, region_name=region, config=config,
                                          **extra)


def _code(e: ClientError) -> str:
    return str(e.response.get("Error", {}).get("Code", ""))
