"""Where artifacts live. The uploaded bundle is kept in the blob store under its digest; each
digest is unpacked once into SVC_DATA_DIR/sites/<hex>/ (complete or absent: unpacked beside it
into sites/.staging-*/ and renamed into place), which the edge serves. Both are shared by every
deployment of that digest, in any project.

A deploy keeps the bundle in the blob store before its row commits (the durable copy every process
can unpack from) and moves the unpacked site into place once it committed; if the transaction
fails, the bundle it added is collected after a grace period unless a committed deployment uses it
by then (`keep_bundle`, `publish_site`, `collect_later`, jobs.py).

Temporary files (SVC_DATA_DIR/tmp/) and staging directories carry the writer's pid and a
per-process token; `sweep_partials` (run at start) removes those a killed process left."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import shutil
import threading
import time
from datetime import timedelta
from pathlib import Path

from svc.adapters.blobs.port import BlobMissing as BlobMissing  # ensure_site raises it
from svc.context import AppContext
from svc.domains.deployments.bundle import Extractor, Limits
from svc.domains.deployments.errors import ArtifactCorrupt
from svc.domains.deployments.kinds import DeploymentJob
from svc.domains.deployments.settings import DeploymentSettings
from svc.kit.clock import utcnow
from svc.kit.files import fsync_dir, is_stale_partial, partial_name, remove_path
from svc.settings import Config
from svc.uow import Tx, unit_of_work

log = logging.getLogger("svc.deployments")

STAGING = ".staging"
# How long the bundle of a failed deploy is kept before it is collected (artifact.collect job).
COLLECT_AFTER = timedelta(minutes=10)
TMP_PREFIXES = ("upload", "fetch", "get")
_READ_CHUNK = 1024 * 1024


def digest_hex(digest: str) -> str:
    algo, _, hexdigest = digest.partition(":")
    if algo != "sha256" or len(hexdigest) != 64 or not all(c in "0123456789abcdef" for c in hexdigest):
        raise ValueError(f"not a sha256 digest: {digest!r}")
    return hexdigest


def blob_key(digest: str) -> str:
    return f"bundles/sha256/{digest_hex(digest)}.tar.gz"


def sites_root(ctx: AppContext) -> Path:
    return ctx.settings.data_dir / "sites"


def site_dir(ctx: AppContext, digest: str) -> Path:
    """The unpacked bundle of a digest (its root holds svc.json, assets/, worker/)."""
    return sites_root(ctx) / digest_hex(digest)


def limits(config: Config) -> Limits:
    rules = config.settings_of(DeploymentSettings)
    return Limits(compressed=rules.max_bundle_bytes, unpacked=rules.max_unpacked_bytes,
                  entries=rules.max_bundle_entries)


def new_staging(ctx: AppContext) -> Path:
    path = sites_root(ctx) / partial_name(STAGING)
    path.mkdir(parents=True)
    return path


def new_tmp_file(config: Config, prefix: str) -> Path:
    directory = config.settings.tmp_dir()
    directory.mkdir(parents=True, exist_ok=True)
    return directory / partial_name(prefix, ".tar.gz")


class SiteStamps:
    """The mtimes given to unpacked sites, this app's (ctx.state_of). nginx's ETag and Last-Modified
    are the file's mtime (in seconds) and size: each unpacked digest gets an mtime second of its
    own, so two versions of a same-sized file unpacked in the same second never share an ETag (a
    stale 304 would show the old version). Drawn in threads (place_site), hence the lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last = 0

    def next(self) -> int:
        with self._lock:
            self._last = max(int(time.time()), self._last + 1)
            return self._last


def place_site(staging: Path, files: list[str], dest: Path, stamps: SiteStamps) -> bool:
    """Rename the complete staging directory to `dest`, its files stamped from `stamps`; if another
    upload of the same digest got there first, discard ours. Blocking. Returns whether ours was
    placed."""
    if dest.is_dir():
        remove_path(staging)
        return False
    stamp = stamps.next()
    root = str(staging)
    for name in files:
        os.utime(f"{root}/{name}", (stamp, stamp), follow_symlinks=False)
    try:
        os.rename(staging, dest)
    except OSError:
        if not dest.is_dir():
            raise
        remove_path(staging)
        return False
    fsync_dir(dest.parent)
    return True


async def keep_bundle(ctx: AppContext, digest: str, bundle: Path) -> bool:
    """Put an uploaded, validated bundle in the blob store (before its row commits); returns
    whether this call added it (False: another deployment of the same digest had it already)."""
    key = blob_key(digest)
    if await ctx.blobs.exists(key):
        return False
    await ctx.blobs.put_file(key, bundle)
    return True


async def publish_site(ctx: AppContext, digest: str, bundle: Path, staging: Path, files: list[str]) -> None:
    """Once the deployment committed: move its unpacked site into place. The bundle is put again if
    it went missing meanwhile (a failed deploy of the same digest removed the copy it believed its
    own), so a committed deployment always has its blob."""
    # The site first: it needs only the local disk, and the edge serves it from there.
    await asyncio.to_thread(place_site, staging, files, site_dir(ctx, digest), ctx.state_of(SiteStamps))
    key = blob_key(digest)
    try:
        if not await ctx.blobs.exists(key):
            await ctx.blobs.put_file(key, bundle)
    except Exception:
        log.exception("the bundle of %s could not be checked in the blob store after its deployment "
                      "committed; other processes cannot unpack it until it is deployed again", digest)


async def collect_later(ctx: AppContext, digest: str) -> None:
    """After a failed deploy that added the bundle: have it removed once COLLECT_AFTER has passed,
    unless a committed deployment uses it by then. Not at once: another upload of the same bytes
    may be about to commit, relying on the bundle it found in the store."""
    async with unit_of_work(ctx, Tx.WRITE) as uow:
        uow.enqueue(DeploymentJob.artifact_collect, {"digest": digest}, run_at=utcnow() + COLLECT_AFTER)


def unpack_file(bundle: Path, staging: Path, bounds: Limits, digest: str) -> list[str]:
    """Validate and unpack a stored bundle (blocking); it must hash to `digest`."""
    hasher = hashlib.sha256()
    extractor = Extractor(staging, bounds)
    try:
        with bundle.open("rb") as f:
            while chunk := f.read(_READ_CHUNK):
                hasher.update(chunk)
                extractor.feed(chunk)
        unpacked = extractor.finish()
    except Exception as e:
        raise ArtifactCorrupt(f"the stored bundle of {digest} does not unpack: {e}") from e
    finally:
        extractor.close()
    if f"sha256:{hasher.hexdigest()}" != digest:
        raise ArtifactCorrupt(f"the stored bundle of {digest} does not match its digest")
    return unpacked.files


async def ensure_site(ctx: AppContext, digest: str) -> Path:
    """The unpacked directory of `digest`, fetched from the blob store and unpacked (with the
    upload's validation, and the digest checked) when this process's data dir lacks it.
    Raises BlobMissing when the blob store has no such bundle, ArtifactCorrupt if it is damaged."""
    dest = site_dir(ctx, digest)
    if dest.is_dir():
        return dest
    bundle = new_tmp_file(ctx.config, "fetch")
    staging = new_staging(ctx)
    try:
        await ctx.blobs.get_to_file(blob_key(digest), bundle)
        files = await asyncio.to_thread(unpack_file, bundle, staging, limits(ctx.config), digest)
        await asyncio.to_thread(place_site, staging, files, dest, ctx.state_of(SiteStamps))
    finally:
        await asyncio.to_thread(_remove_all, bundle, staging)
    return dest


def _remove_site(path: Path, aside: Path) -> None:
    """Move the directory out of its place first, so it disappears at once rather than file by file."""
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return
    shutil.rmtree(aside, ignore_errors=True)


def _remove_all(*paths: Path) -> None:
    for p in paths:
        remove_path(p)


def sweep_partials(ctx: AppContext) -> int:
    """Remove what killed processes left half-done: staging directories, temporary uploads and
    downloads, and the file blob store's temporary files. Blocking; run at start."""
    removed = 0
    sites = sites_root(ctx)
    if sites.is_dir():
        for p in sites.iterdir():
            if is_stale_partial(p, STAGING):
                remove_path(p)
                removed += 1
    tmp = ctx.settings.tmp_dir()
    if tmp.is_dir():
        for p in tmp.iterdir():
            if any(is_stale_partial(p, prefix) for prefix in TMP_PREFIXES):
                remove_path(p)
                removed += 1
    return removed + ctx.blobs.sweep_partials()


async def remove_artifact(ctx: AppContext, digest: str) -> None:
    """Remove a digest's unpacked site and stored bundle (idempotent). Callers check first that no
    other deployment uses the digest."""
    path = site_dir(ctx, digest)
    if path.exists():
        await asyncio.to_thread(_remove_site, path, sites_root(ctx) / partial_name(STAGING))
    await ctx.blobs.delete(blob_key(digest))
