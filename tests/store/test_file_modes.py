"""The data directory is private: svc creates it 0700 and everything under it 0700/0600, and
repairs looser modes an earlier version left, with a warning (issue: any local user could read
password hashes, sealed secrets and the files of protected projects)."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from svc.settings import Settings
from tests.deployments.conftest import make_env
from tests.support import bundles
from tests.support.api import running_svc


def _open_to_others(root: Path) -> list[str]:
    """Paths under root (root included) that a group or other user may read, write or enter."""
    found = []
    for path in [root, *root.rglob("*")]:
        st = path.lstat()
        if not stat.S_ISLNK(st.st_mode) and st.st_mode & 0o077:
            found.append(f"{path.relative_to(root.parent)} {stat.filemode(st.st_mode)}")
    return found


@pytest.fixture
def settings(settings: Settings, tmp_path: Path) -> Settings:
    """A data dir svc makes itself (not the one the fixtures put a copy of the migrated SQLite
    store in, 0700 already)."""
    return settings.model_copy(update={"data_dir": tmp_path / "made-by-svc"})


async def test_what_svc_writes_is_private(settings: Settings) -> None:
    async with running_svc(settings) as svc:
        env = await make_env(svc)
        r = await env.deploy(bundles.site({"assets/index.html": b"<h1>protected</h1>"}))
        assert r.status_code == 201, r.text
        await env.owner.client.post(f"/v1/orgs/{env.org}/invites", json={"email": "bob@example.com"})
    data = settings.data_dir
    written = {p.relative_to(data).parts[0] for p in data.rglob("*")}
    assert {"svc.sqlite3", "secret.key", "blobs", "sites"} <= written or settings.database_url, written
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert _open_to_others(data) == []


async def test_looser_modes_are_repaired_at_start(settings: Settings, caplog: pytest.LogCaptureFixture) -> None:
    data = settings.data_dir
    data.mkdir(parents=True)
    os.chmod(data, 0o755)
    (data / "sites" / "old").mkdir(parents=True)
    os.chmod(data / "sites", 0o755)
    os.chmod(data / "sites" / "old", 0o775)
    (data / "sites" / "old" / "index.html").write_text("left by an earlier svc")
    os.chmod(data / "sites" / "old" / "index.html", 0o644)
    (data / "elsewhere").symlink_to("/etc")  # links are not followed, nor changed
    with caplog.at_level(logging.WARNING, logger="svc"):
        async with running_svc(settings):
            pass
    assert _open_to_others(data) == []
    assert stat.S_IMODE(Path("/etc").stat().st_mode) & 0o055, "the link's target is untouched"
    [warning] = [r for r in caplog.records if "readable by other users" in r.getMessage()]
    assert warning.levelno == logging.WARNING and str(data) in warning.getMessage()
