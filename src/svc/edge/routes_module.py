"""nginx's reader of the routing table: a small dynamic module (module/, C), built here for the
very nginx that runs it (docs/edge.md "How a request finds its site").

Reading the table from Lua costs every request a Lua call (about 2 us on this class of machine: a
quarter of a 10 KB file's whole cost); the module reads the same shared dictionary in C. It is
built with the nginx sources Debian ships for this purpose (nginx-dev: /usr/share/nginx/src, with
the flags nginx itself was configured with) and a C compiler, once per nginx version and module
source, into a cache directory shared by every svc of this user; `make setup` builds it ahead.
Several builds racing end with identical files, each renamed into place whole."""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from svc.edge.process import nginx_build

SOURCE = Path(__file__).resolve().parent / "module"
NAME = "ngx_http_svc_routes_module.so"
NGINX_SOURCES = Path("/usr/share/nginx/src")
BUILD_SECONDS = 300


class ModuleBuildError(Exception):
    """The module could not be built (what is missing, or the compiler's last words)."""


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "svc" / "nginx-modules"


def _nginx_version(build: str) -> str:
    found = re.search(r"nginx/(\S+)", build)
    if found is None:
        raise ModuleBuildError(f"nginx -V said {build.strip()[:200]!r}")
    return found.group(1)


def _key(version: str) -> str:
    digest = hashlib.sha256(version.encode())
    for path in sorted(SOURCE.iterdir()):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return f"{version}-{digest.hexdigest()[:16]}"


def _configure_flags(sources: Path) -> list[str]:
    """The flags this nginx was configured with (nginx-dev's conf_flags: a shell array)."""
    text = (sources / "conf_flags").read_text()
    found = re.search(r"\(\s*(.*?)\s*\)", text, re.S)
    if found is None:
        raise ModuleBuildError(f"cannot read {sources / 'conf_flags'}")
    return shlex.split(found.group(1))


def routes_module(build: str) -> Path:
    """The module file for the nginx whose `nginx -V` is `build` (process.nginx_build), built
    first when the cache does not hold it."""
    version = _nginx_version(build)
    target = cache_dir() / _key(version) / NAME
    if target.is_file():
        return target
    if not (NGINX_SOURCES / "configure").is_file():
        raise ModuleBuildError(f"no nginx sources in {NGINX_SOURCES} (Debian: apt-get install nginx-dev)")
    if shutil.which("cc") is None:
        raise ModuleBuildError("no C compiler (Debian: apt-get install gcc)")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="svc-nginx-module-") as tmp:
        tree = Path(tmp) / "nginx"
        shutil.copytree(NGINX_SOURCES, tree, symlinks=True)
        steps = ([str(tree / "configure"), *_configure_flags(tree), f"--add-dynamic-module={SOURCE}"],
                 ["make", "-f", "objs/Makefile", "modules"])
        for step in steps:
            done = subprocess.run(step, cwd=tree, capture_output=True, text=True, timeout=BUILD_SECONDS, check=False)
            if done.returncode != 0:
                raise ModuleBuildError(f"{step[0]} failed: {(done.stdout + done.stderr)[-2000:]}")
        partial = target.parent / f".{NAME}.{os.getpid()}"
        shutil.copyfile(tree / "objs" / NAME, partial)
        partial.chmod(0o755)
        os.replace(partial, target)
    return target


def main() -> None:
    """Build it now (scripts/bootstrap.sh, for make setup; the nginx binary may be named)."""
    found = shutil.which("nginx", path=os.environ.get("PATH", "") + ":/usr/sbin")
    binary = sys.argv[1] if len(sys.argv) > 1 else (found or "nginx")
    try:
        print(routes_module(nginx_build(binary)))
    except ModuleBuildError as exc:
        sys.exit(f"svc: the edge's nginx module: {exc}")
