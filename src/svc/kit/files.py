"""Files written so that nothing half-done is ever seen: temporary names that say which process
wrote them (so what a killed process left can be told apart and swept), removal that tolerates
absence, directory fsync. Shared by the file blob store and the deployments' unpacked sites."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import stat
import time
from pathlib import Path

# Identifies this process's incarnation: a restarted process may get the same pid (containers).
_BOOT = secrets.token_hex(4)
_STALE_AFTER = 24 * 3600


def partial_name(prefix: str, suffix: str = "") -> str:
    """A name for a temporary file or directory of this process, e.g. 'upload-1234-ab12cd34-<random>'."""
    return f"{prefix}-{os.getpid()}-{_BOOT}-{secrets.token_hex(8)}{suffix}"


def is_stale_partial(path: Path, prefix: str) -> bool:
    """Was `path` (named by partial_name(prefix)) left by a process that is gone? Partials of live
    processes sharing the directory are kept, unless older than a day."""
    parts = path.name[len(prefix) + 1:].split("-")
    if not path.name.startswith(prefix + "-") or len(parts) < 3 or not parts[0].isdigit():
        return False
    pid, boot = int(parts[0]), parts[1]
    if boot == _BOOT:
        return False
    if pid == os.getpid():
        return True  # an earlier incarnation of this process
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass
    try:
        return time.time() - path.lstat().st_mtime > _STALE_AFTER
    except FileNotFoundError:
        return False


def sweep_stale(directory: Path, prefix: str) -> int:
    """Remove the partials (named by partial_name(prefix)) in `directory` that processes now gone
    left (blocking); how many."""
    if not directory.is_dir():
        return 0
    stale = [p for p in directory.iterdir() if is_stale_partial(p, prefix)]
    for p in stale:
        remove_path(p)
    return len(stale)


def remove_path(path: Path) -> None:
    """Remove a file or a directory tree; missing is fine."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# What svc writes under its data directory is its own: the store (password and token hashes,
# sealed secrets, audit rows), blobs, the files of protected projects, mail.
PRIVATE_UMASK = 0o077


def make_private(root: Path) -> int:
    """Create `root` (0700) if missing, and take group and other permissions off everything under
    it that has any (directories 0700, files 0600 at most). Blocking; symbolic links are not
    followed. Returns how many paths were looser than that."""
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    repaired = 0
    for directory, dirs, files in os.walk(root, followlinks=False):
        for name in (directory, *(os.path.join(directory, n) for n in (*dirs, *files))):
            try:
                st = os.lstat(name)
            except FileNotFoundError:
                continue
            if stat.S_ISLNK(st.st_mode) or not st.st_mode & 0o077:
                continue
            os.chmod(name, stat.S_IMODE(st.st_mode) & 0o700)
            repaired += 1
    return repaired


# --- a supervised process's log (the edge's nginx, the managed PowerDNS) ---

def file_size(path: Path) -> int:
    """The file's size; 0 when it does not exist (yet)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def read_from(path: Path, offset: int, limit: int = 64 * 1024) -> str:
    """What was written to the file after `offset` (at most `limit` bytes), as text: what a
    process said since it was started."""
    try:
        with path.open("rb") as f:
            f.seek(offset)
            return f.read(limit).decode("utf-8", "replace")
    except OSError:
        return ""


def tail(path: Path, limit: int = 2000) -> str:
    """The file's last `limit` bytes as text, stripped ("" when it does not exist)."""
    try:
        with path.open("rb") as f:
            f.seek(max(0, file_size(path) - limit))
            return f.read().decode("utf-8", "replace").strip()
    except OSError:
        return ""
