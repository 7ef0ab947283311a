"""The credential store: one session per API address, in `<config dir>/svc/credentials.json`.

The config dir is `$XDG_CONFIG_HOME` when set (on every platform), else platformdirs' user config
dir (`~/.config` on Linux). The directory is created 0700 and the file is written 0600, atomically
(a temporary file in the same directory, then a rename), so a crash never leaves half a file and
the token is never readable by other users, not even for a moment.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

FILE_NAME = "credentials.json"
_VERSION = 1


@dataclass(frozen=True)
class Credential:
    token: str
    user_id: str | None = None
    subject: str | None = None
    expires_at: str | None = None
    # The personal access token `svc git-credential` made for git over HTTPS (git never takes the
    # session); gone with `svc logout`.
    git_token: str | None = None


def config_dir() -> Path:
    xdg = os.environ.get("XDG_CONFIG_HOME", "").strip()
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "svc"
    import platformdirs  # only when XDG_CONFIG_HOME does not say

    return Path(platformdirs.user_config_dir("svc", appauthor=False))


def path() -> Path:
    return config_dir() / FILE_NAME


def _read() -> dict[str, Any]:
    try:
        raw = path().read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        return {}
    sites = data.get("credentials") if isinstance(data, dict) else None
    return sites if isinstance(sites, dict) else {}


def load(api_url: str) -> Credential | None:
    entry = _read().get(api_url)
    if not isinstance(entry, dict) or not isinstance(entry.get("token"), str) or not entry["token"]:
        return None
    return Credential(token=entry["token"], user_id=_str(entry.get("userId")), subject=_str(entry.get("subject")),
                      expires_at=_str(entry.get("expiresAt")), git_token=_str(entry.get("gitToken")))


def save(api_url: str, cred: Credential) -> Path:
    sites = _read()
    entry = {k: v for k, v in asdict(cred).items() if v is not None}
    sites[api_url] = {"token": entry.pop("token"), **{_camel(k): v for k, v in entry.items()}}
    return _write(sites)


def remove(api_url: str) -> bool:
    sites = _read()
    if api_url not in sites:
        return False
    del sites[api_url]
    _write(sites)
    return True


def _write(sites: dict[str, Any]) -> Path:
    directory = config_dir()
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        os.chmod(directory, 0o700)
    body = json.dumps({"version": _VERSION, "credentials": sites}, indent=2, sort_keys=True) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=".credentials-", suffix=".tmp", dir=directory)  # created 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            os.fchmod(f.fileno(), 0o600)
            f.write(body)
            f.flush()
            os.fsync(f.fileno())
        target = directory / FILE_NAME
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return target


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None
