"""The edge's routing table on disk: one symbolic link per host, EDGE/hosts/<host>, to the directory
it serves. nginx resolves the link on every request ($realpath_root, templates/nginx.conf.j2), so
a deploy, a rollback or a policy change is one atomic rename here and never an nginx reload.

Where a link leads says what the host is (the config maps the real path's ending):
- a public project's live site: SVC_DATA_DIR/sites/<digest>/assets;
- a protected project's gate: EDGE/gates/<project>/<generation>-<digest>.gate, a real directory
  whose `assets` links to the site (<generation>-none.gate: to void/none). The gate's path is in
  the check cache's key, so a policy change (a new generation) or a deploy starts afresh;
- EDGE/void/none (no deployment yet), void/pending (a custom name not proven), void/unknown.

Links are never removed while nginx runs (a host nobody routes any more links to void/unknown:
nginx tests the link's existence through its open-file cache, which would keep a removed link's
answer for a while); `prune()` removes those at start, before nginx. Gates no link uses are removed
a minute after they were made, so a request that resolved one just before it was replaced still
finds its files."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import time
from pathlib import Path

from svc.edge.config import EdgeLayout
from svc.kit.files import partial_name
from svc.kit.hosts import valid_host

# A gate no link uses is removed once it is older than this (requests in flight may still use it).
GATE_GRACE_SECONDS = 60.0


class HostLinks:
    """The links of one edge, with what they point to kept in memory (read from disk at start)."""

    def __init__(self, layout: EdgeLayout) -> None:
        self.layout = layout
        self._targets: dict[str, str] = {}

    def load(self) -> None:
        """Read the links a previous run left (they keep serving until the first converge)."""
        self._targets = {}
        with os.scandir(self.layout.hosts) as entries:
            for entry in entries:
                if entry.name.startswith("."):
                    # A half-made link of a killed process.
                    with contextlib.suppress(OSError):
                        os.unlink(entry.path)
                elif entry.is_symlink():
                    self._targets[entry.name] = os.readlink(entry.path)

    def hosts(self) -> set[str]:
        return set(self._targets)

    def target(self, host: str) -> str | None:
        return self._targets.get(host)

    def served_assets(self, host: str) -> Path | None:
        """The site directory (a deployment's assets/) the host serves now, if it serves one."""
        target = self._targets.get(host)
        if target is None:
            return None
        path = Path(target)
        if path.name.endswith(".gate"):
            try:
                path = Path(os.readlink(path / "assets"))
            except OSError:
                return None
        return path if path.name == "assets" else None

    def point(self, host: str, target: Path) -> bool:
        """Make `host` serve `target` (atomic: a request sees the old link or the new one).
        Returns whether the link changed."""
        if not valid_host(host):
            raise ValueError(f"not a host name the edge routes: {host!r}")
        wanted = str(target)
        if self._targets.get(host) == wanted:
            return False
        link = self.layout.hosts / host
        if host not in self._targets:
            # A new host: the link appears whole (symlink(2) is atomic), one system call.
            with contextlib.suppress(FileExistsError):
                os.symlink(wanted, link)
                self._targets[host] = wanted
                return True
        temp = self.layout.hosts / partial_name(f".{host}")
        os.symlink(wanted, temp)
        try:
            os.replace(temp, link)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
        self._targets[host] = wanted
        return True

    def forget(self, host: str) -> bool:
        """A host nobody routes: its link leads to void/unknown (see the module's docstring)."""
        if host not in self._targets:
            return False
        return self.point(host, self.layout.void_unknown)

    def gate(self, project_id: str, generation: int, site_assets: Path | None) -> Path:
        """The gate of a protected project's live site (None: no deployment yet), made when missing:
        complete or absent (made beside it and renamed into place)."""
        name = f"{int(generation)}-{site_assets.parent.name if site_assets is not None else 'none'}.gate"
        if not re.fullmatch(r"[A-Za-z0-9_]{1,64}", project_id):
            raise ValueError(f"not a project id: {project_id!r}")
        gate = self.layout.gates / project_id / name
        if gate.is_dir():
            return gate
        gate.parent.mkdir(parents=True, exist_ok=True)
        staging = gate.parent / partial_name(".gate")
        staging.mkdir()
        try:
            os.symlink(site_assets if site_assets is not None else self.layout.void_none, staging / "assets")
            os.rename(staging, gate)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
            if not gate.is_dir():
                raise
        return gate

    def prune(self, *, nginx_running: bool) -> None:
        """Remove gates no link uses (older than the grace period while nginx runs) and, before
        nginx starts, the links of hosts nobody routes."""
        unknown = str(self.layout.void_unknown)
        if not nginx_running:
            for host, target in list(self._targets.items()):
                if target == unknown:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(self.layout.hosts / host)
                    del self._targets[host]
        used = {Path(t) for t in self._targets.values()}
        cutoff = time.time() - GATE_GRACE_SECONDS
        for project in _dirs(self.layout.gates):
            for gate in _dirs(project):
                if gate in used:
                    continue
                with contextlib.suppress(FileNotFoundError):
                    if not nginx_running or gate.lstat().st_mtime < cutoff:
                        shutil.rmtree(gate, ignore_errors=True)
            with contextlib.suppress(OSError):
                project.rmdir()  # only when empty


def _dirs(path: Path) -> list[Path]:
    try:
        return [p for p in path.iterdir() if p.is_dir() and not p.is_symlink()]
    except FileNotFoundError:
        return []
