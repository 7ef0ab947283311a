"""Where artifacts live. The uploaded bundle is kept in the blob store under its digest; each
digest is unpacked once into SVC_DATA_DIR/sites/<hex>/ (complete or absent: unpacked beside it
and renamed into place), which the edge serves. Both are shared by every deployment of that
digest, in any project."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from svc.context import AppContext
from svc.models import Deployment


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


async def referenced_elsewhere(session: AsyncSession, digest: str, project_id: str) -> bool:
    found = await session.scalar(
        select(Deployment.id).where(Deployment.digest == digest, Deployment.project_id != project_id).limit(1))
    return found is not None


async def remove_artifact(ctx: AppContext, digest: str) -> None:
    """Remove a digest's unpacked site and stored bundle (idempotent). Callers check first that no
    other deployment uses the digest."""
    path = site_dir(ctx, digest)
    if path.exists():
        await asyncio.to_thread(shutil.rmtree, path, True)
    if ctx.adapters.blobs is not None:
        await ctx.adapters.blobs.delete(blob_key(digest))
