"""Generations of the projects' databases (docs/database.md, "Generations"): what they are in the
store and the blob store, how one is taken, checked, proven restorable and pruned.

A generation is a pg_dump custom-format archive in the blob store under
`databases/<project id>/e<epoch>/<generation id>.dump`, with its bytes, sha256 and the rows per
table of the snapshot it dumped. `epoch` starts at 1 and rises with each restore; `seq` counts
from 1 within an epoch (decisions.md). The list reads svc's own table only, so it needs no live
database, and the final generation of a deleted database stays listed.

Work on the node and the blob store runs with nothing of the store held: these functions are
called by jobs (jobs.py) and operations (operations.py) between their reads and their writes."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from svc.adapters.database.port import DatabaseNode, DatabaseNodeError
from svc.context import AppContext
from svc.kit.clock import utcnow
from svc.kit.files import is_stale_partial, partial_name, remove_path
from svc.kit.ids import new_id
from svc.models import DatabaseGeneration, GenerationKind, ProjectDatabase

TMP_PREFIX = "dbdump"
# What a list shows and restore can select (an export is neither).
LISTED = (GenerationKind.scheduled, GenerationKind.manual, GenerationKind.pre_restore, GenerationKind.final)
# Retention's pools, each kept by the same rule on its own: the grid's generations, and those taken
# on request (back up now), so that a burst of the latter never pushes the former out.
POOLS = ((GenerationKind.scheduled, GenerationKind.pre_restore), (GenerationKind.manual,))
PRUNABLE = tuple(kind for pool in POOLS for kind in pool)


def tmp_file(ctx: AppContext) -> Path:
    directory = ctx.settings.tmp_dir()
    directory.mkdir(parents=True, exist_ok=True)
    return directory / partial_name(TMP_PREFIX, ".dump")


def blob_key(project_id: str, epoch: int, generation_id: str) -> str:
    return f"databases/{project_id}/e{epoch}/{generation_id}.dump"


def _digest(path: Path) -> tuple[int, str]:
    sha = hashlib.sha256()
    size = 0
    with path.open("rb") as f:
        while chunk := f.read(1024 * 1024):
            sha.update(chunk)
            size += len(chunk)
    return size, sha.hexdigest()


@dataclass(frozen=True)
class Taken:
    """A dump in the blob store, not yet a row."""

    id: str
    blob_key: str
    bytes: int
    sha256: str
    row_counts: dict[str, int]
    marker: str | None
    taken_at: datetime


async def take(ctx: AppContext, node: DatabaseNode, project_id: str, epoch: int) -> Taken:
    """Dump the project's database and store the archive (DatabaseNodeError: it failed)."""
    markers = await node.change_markers([project_id])
    path = tmp_file(ctx)
    try:
        rows = await node.dump(project_id, path)
        size, sha = await asyncio.to_thread(_digest, path)
        generation_id = new_id("gen")
        key = blob_key(project_id, epoch, generation_id)
        await ctx.blobs.put_file(key, path)
    finally:
        await asyncio.to_thread(remove_path, path)
    return Taken(id=generation_id, blob_key=key, bytes=size, sha256=sha, row_counts=rows,
                 marker=markers.get(project_id), taken_at=utcnow())


def row_of(taken: Taken, project_id: str, epoch: int, seq: int, kind: GenerationKind) -> DatabaseGeneration:
    return DatabaseGeneration(id=taken.id, project_id=project_id, epoch=epoch, seq=seq, kind=kind.value,
                              blob_key=taken.blob_key, bytes=taken.bytes, sha256=taken.sha256,
                              created_at=taken.taken_at, row_counts=taken.row_counts, verified=None)


class Tampered(Exception):
    """The archive's bytes are not the ones recorded (sha256 differs), or it is gone."""


@contextlib.asynccontextmanager
async def fetched(ctx: AppContext, generation: DatabaseGeneration) -> AsyncIterator[Path]:
    """The generation's archive as a local file whose sha256 was checked against the row's."""
    path = tmp_file(ctx)
    try:
        try:
            await ctx.blobs.get_to_file(generation.blob_key, path)
        except Exception as exc:  # BlobMissing, or the store failing: either way not restorable now
            raise Tampered(f"the archive could not be read: {exc}") from None
        size, sha = await asyncio.to_thread(_digest, path)
        if sha != generation.sha256 or size != generation.bytes:
            raise Tampered("the archive's sha256 no longer matches the one recorded when it was taken")
        yield path
    finally:
        await asyncio.to_thread(remove_path, path)


@dataclass(frozen=True)
class Verification:
    verified: bool
    restore_seconds: float | None
    error: str | None


async def verify(ctx: AppContext, node: DatabaseNode, generation: DatabaseGeneration) -> Verification:
    """Restore the generation into a scratch database and compare its rows per table with the
    counts taken at dump time."""
    try:
        async with fetched(ctx, generation) as path:
            restored, seconds = await node.verify(generation.project_id, path)
    except Tampered as exc:
        return Verification(False, None, str(exc))
    except DatabaseNodeError as exc:
        return Verification(False, None, str(exc))
    expected = {k: int(v) for k, v in (generation.row_counts or {}).items()}
    if restored != expected:
        differ = sorted(k for k in set(expected) | set(restored) if expected.get(k) != restored.get(k))
        shown = ", ".join(f"{k}: {expected.get(k)} dumped, {restored.get(k)} restored" for k in differ[:5])
        return Verification(False, seconds, f"the restore's rows differ from the dump's ({shown})")
    return Verification(True, seconds, None)


def prunable(generations: list[DatabaseGeneration], *, keep_hourly: int, keep_daily: int,
             now: datetime) -> list[DatabaseGeneration]:
    """Which of a project's generations retention lets go: in each pool (POOLS: the scheduled and
    pre-restore ones; those taken on request), all but the newest `keep_hourly` and the newest of
    each of the last `keep_daily` days. A final generation and exports are never pruned."""
    gone: list[DatabaseGeneration] = []
    horizon = now - timedelta(days=keep_daily)
    for pool in POOLS:
        candidates = sorted((g for g in generations if g.kind in pool), key=lambda g: g.created_at, reverse=True)
        kept = {g.id for g in candidates[:keep_hourly]}
        days: set[object] = set()
        for g in candidates:
            day = g.created_at.date()
            if g.created_at >= horizon and day not in days:
                days.add(day)
                kept.add(g.id)
        gone += [g for g in candidates if g.id not in kept]
    return gone


def needs_generation(grant: ProjectDatabase, marker: str | None) -> bool:
    """Whether the database changed since its last generation (a database never dumped has)."""
    return marker is not None and marker != grant.change_marker


def sweep_partials(ctx: AppContext) -> int:
    """Dumps and downloads a killed process left in the tmp dir (blocking; run at start)."""
    directory = ctx.settings.tmp_dir()
    stale = [p for p in directory.iterdir() if is_stale_partial(p, TMP_PREFIX)] if directory.is_dir() else []
    for path in stale:
        remove_path(path)
    return len(stale)
