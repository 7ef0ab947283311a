"""A real S3-compatible server for tests: moto's server mode in a process of its own, on
127.0.0.1 and a free port (it prints the address it took).

    with moto_server(tmp_dir) as url:          # http://127.0.0.1:<port>
        create_bucket(url, "bundles")
        settings = s3_settings(settings, url, "bundles")
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3

from svc.settings import Settings
from tests.support.config import configured
from tests.support.wait import START_SECONDS

ACCESS_KEY = "testing"
SECRET_KEY = "testing"
_MOTO = Path(sys.executable).parent / "moto_server"
_ADDRESS = re.compile(r"Running on (http://127\.0\.0\.1:\d+)")


@contextmanager
def moto_server(log_dir: Path, *, timeout: float = START_SECONDS) -> Iterator[str]:
    log_path = log_dir / "moto.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen([str(_MOTO), "-H", "127.0.0.1", "-p", "0"], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + timeout
        while True:
            found = _ADDRESS.search(log_path.read_text(errors="replace"))
            if found:
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"moto_server did not start:\n{log_path.read_text(errors='replace')[-2000:]}")
            time.sleep(0.05)
        yield found.group(1)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def client(url: str) -> Any:
    return boto3.session.Session().client("s3", endpoint_url=url, region_name="us-east-1",
                                          aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY)


def create_bucket(url: str, bucket: str) -> None:
    client(url).create_bucket(Bucket=bucket)


def object_keys(url: str, bucket: str) -> list[str]:
    listed = client(url).list_objects_v2(Bucket=bucket)
    return sorted(o["Key"] for o in listed.get("Contents", []))


def s3_settings(settings: Settings, url: str, bucket: str, prefix: str = "svc/") -> Settings:
    from pydantic import SecretStr

    return configured(settings, blob_store="s3", s3_endpoint_url=url, s3_bucket=bucket, s3_prefix=prefix,
                      s3_access_key_id=ACCESS_KEY, s3_secret_access_key=SecretStr(SECRET_KEY))
