"""A bundle's worker: what svc.json says of it and the modules under worker/ (decisions.md,
"Workers"). Read from the unpacked bundle at deploy time (to check it with the runtime before it
goes live: `check_bundle`) and when the runtime asks for the code of a live deployment (the workers
area, through service.worker_of).

    svc.json  "main"               the entry module, a path under worker/ (default index.js)
              "compatibilityDate"  YYYY-MM-DD (default DEFAULT_COMPATIBILITY_DATE)
              "assets"             "files-first" (default): a path that exists in assets/ is
                                   served by the edge; "worker-first": every request goes to
                                   the worker, which reaches the files through env.ASSETS

Modules are the .js and .mjs files under worker/ (ES modules, imported by relative path), and
.json and .txt files (imported as a value and as a string). Other files there are not modules:
the runtime never sees them."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from svc.adapters.workers.port import BadWorker, RuntimeUnavailable, WorkerCode
from svc.context import AppContext
from svc.domains.deployments.errors import BadBundle, InvalidWorker
from svc.errors import ServiceUnavailable

log = logging.getLogger("svc.workers")

WORKER_DIR = "worker/"
DEFAULT_MAIN = "index.js"
# The compatibility date a worker runs under when svc.json names none (docs/workers.md): fixed, so a
# worker deployed today behaves the same after svc's workerd is upgraded.
DEFAULT_COMPATIBILITY_DATE = "2025-06-01"
ASSET_MODES = ("files-first", "worker-first")
MODULE_SUFFIXES = (".js", ".mjs")
VALUE_SUFFIXES = {".json": "json", ".txt": "text"}
# The modules of one worker together, as the runtime loads them (the bundle's own bound is larger).
MAX_CODE_BYTES = 10 * 1024 * 1024
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass(frozen=True)
class WorkerSpec:
    """What a deployment records of its worker (Deployment.worker)."""

    main: str
    compatibility_date: str
    assets: str

    def as_row(self) -> dict[str, Any]:
        return {"main": self.main, "compatibilityDate": self.compatibility_date, "assets": self.assets}

    @classmethod
    def of_row(cls, row: dict[str, Any]) -> WorkerSpec:
        return cls(main=row["main"], compatibility_date=row["compatibilityDate"], assets=row["assets"])


def _manifest_error(message: str) -> BadBundle:
    return BadBundle(message, details={"reason": "bad_manifest"})


def worker_spec(manifest: dict[str, Any], files: list[str]) -> WorkerSpec | None:
    """The worker a bundle holds, None for a static site; BadBundle (bad_manifest) when svc.json's
    worker fields are not valid or name an entry module the bundle does not have."""
    main = manifest.get("main", DEFAULT_MAIN)
    compatibility_date = manifest.get("compatibilityDate", DEFAULT_COMPATIBILITY_DATE)
    assets = manifest.get("assets", "files-first")
    if assets not in ASSET_MODES:
        raise _manifest_error('svc.json "assets" must be "files-first" or "worker-first"')
    if not isinstance(compatibility_date, str) or not _valid_date(compatibility_date):
        raise _manifest_error('svc.json "compatibilityDate" must be a date, YYYY-MM-DD')
    if not isinstance(main, str) or not main or main.startswith("/") or not main.endswith(MODULE_SUFFIXES):
        raise _manifest_error('svc.json "main" must be the path of a .js or .mjs file under worker/')
    if not any(name.startswith(WORKER_DIR) for name in files):
        if "main" in manifest:
            raise _manifest_error(f'svc.json "main" names worker/{main}, but the bundle has no worker/')
        return None
    if WORKER_DIR + main not in files:
        raise _manifest_error(f'svc.json "main" names worker/{main}, which is not in the bundle')
    return WorkerSpec(main=main, compatibility_date=compatibility_date, assets=assets)


def _valid_date(value: str) -> bool:
    if not _DATE.match(value):
        return False
    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return True


def read_code(root: Path, spec: WorkerSpec) -> WorkerCode:
    """The worker's modules from an unpacked bundle (blocking: run it in a thread)."""
    worker_root = root / WORKER_DIR
    modules: dict[str, Any] = {}
    total = 0
    for path in sorted(worker_root.rglob("*")):
        if not path.is_file():
            continue
        name = path.relative_to(worker_root).as_posix()
        kind = "esModule" if path.suffix in MODULE_SUFFIXES else VALUE_SUFFIXES.get(path.suffix)
        if kind is None:
            continue
        data = path.read_bytes()
        total += len(data)
        if total > MAX_CODE_BYTES:
            raise BadBundle(f"The worker's modules are over {MAX_CODE_BYTES:,} bytes together",
                            details={"reason": "worker_too_large"})
        try:
            source = data.decode("utf-8")
        except UnicodeDecodeError:
            raise BadBundle(f"worker/{name} is not UTF-8 text", details={"reason": "bad_module",
                                                                          "path": f"worker/{name}"}) from None
        if kind == "json":
            try:
                modules[name] = {"json": json.loads(source)}
            except ValueError:
                raise BadBundle(f"worker/{name} is not valid JSON",
                                details={"reason": "bad_module", "path": f"worker/{name}"}) from None
        elif kind == "text":
            modules[name] = {"text": source}
        else:
            modules[name] = source
    return WorkerCode(main_module=spec.main, modules=modules, compatibility_date=spec.compatibility_date)


async def check_bundle(ctx: AppContext, root: Path, manifest: dict[str, Any], files: list[str]) -> WorkerSpec | None:
    """The bundle's worker, checked by the runtime before its deployment is made: 400 bad_worker
    with the runtime's words when it cannot run. Without a runtime (workers off on this svc) the
    worker is recorded unchecked; BadBundle when svc.json's worker fields are wrong."""
    spec = worker_spec(manifest, files)
    if spec is None:
        return None
    runtime = ctx.adapters.runtime
    if runtime is None:
        return spec
    code = await asyncio.to_thread(read_code, root, spec)
    try:
        await runtime.check(code)
    except BadWorker as exc:
        raise InvalidWorker(f"The worker cannot be loaded: {exc}", details={"main": f"worker/{spec.main}"}) \
            from None
    except RuntimeUnavailable as exc:
        log.error("a worker could not be checked: %s", exc)
        raise ServiceUnavailable("The worker runtime is not available; try again") from None
    return spec
