"""svc with its git node, served on a real port (the git CLI is the client), on both stores; and a
`Git` that runs the real git CLI as a person would, with its own HOME."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import uvicorn

from svc.settings import Config, Settings
from tests.support.api import Svc, User, running_svc
from tests.support.config import configured
from tests.support.ports import free_port
from tests.support.wait import START_SECONDS, until


@dataclass
class Run:
    code: int
    out: str
    err: str

    @property
    def said(self) -> str:
        return self.out + self.err


class Git:
    """The git CLI in a home of its own (no system or user config leaks in)."""

    def __init__(self, home: Path) -> None:
        self.home = home
        home.mkdir(parents=True, exist_ok=True)
        self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LC_ALL": "C",
                    "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0", "GIT_AUTHOR_NAME": "Ada",
                    "GIT_AUTHOR_EMAIL": "ada@example.com", "GIT_COMMITTER_NAME": "Ada",
                    "GIT_COMMITTER_EMAIL": "ada@example.com"}

    async def __call__(self, *args: str, cwd: Path | None = None, ok: bool = True,
                       env: dict[str, str] | None = None) -> Run:
        process = await asyncio.create_subprocess_exec(
            "git", *args, cwd=cwd, env={**self.env, **(env or {})}, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(process.communicate(), timeout=120)
        run = Run(process.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace"))
        if ok:
            assert run.code == 0, f"git {' '.join(args)} failed ({run.code}):\n{run.said}"
        return run

    async def site(self, where: Path, *, manifest: str = '{"name": "site"}', page: str = "<h1>hello</h1>",
                   branch: str = "main") -> Path:
        """A work tree with a static site (svc.json, assets/index.html) committed on `branch`."""
        await self("init", "-q", "-b", branch, str(where))
        (where / "svc.json").write_text(manifest)
        (where / "assets").mkdir(exist_ok=True)
        (where / "assets" / "index.html").write_text(page)
        await self("add", ".", cwd=where)
        await self("commit", "-qm", "the site", cwd=where)
        return where

    async def head(self, where: Path) -> str:
        return (await self("rev-parse", "HEAD", cwd=where)).out.strip()


def with_token(url: str, token: str) -> str:
    """A clone URL with the token in Basic auth's password (the username is ignored)."""
    return url.replace("://", f"://anyone:{token}@", 1)


@dataclass
class Served:
    svc: Svc
    url: str


@asynccontextmanager
async def serving(settings: Settings | Config) -> AsyncIterator[Served]:
    """svc on a real port of 127.0.0.1 (its SVC_PUBLIC_URL), its lifespan run by the test."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    async with running_svc(configured(settings, public_url=url)) as svc:
        server = uvicorn.Server(uvicorn.Config(svc.app, log_level="warning", lifespan="off"))
        task = asyncio.create_task(server.serve(sockets=[sock]))
        try:
            await until(lambda: server.started, timeout=START_SECONDS, what="svc's HTTP server started")
            yield Served(svc, url)
        finally:
            server.should_exit = True
            await task
            sock.close()


@pytest.fixture
async def served(settings: Settings) -> AsyncIterator[Served]:
    async with serving(settings) as running:
        yield running


@pytest.fixture
async def ssh_served(settings: Settings) -> AsyncIterator[Served]:
    """`served`, with git over SSH on a free port too."""
    async with serving(configured(settings, ssh_port=free_port())) as running:
        yield running


@pytest.fixture
def git(tmp_path: Path) -> Git:
    return Git(tmp_path / "home")


async def project_with_repo(user: User, project: str = "web", repo: str = "site", **body: str) -> dict[str, str]:
    org = user.personal_org
    r = await user.client.post(f"/v1/orgs/{org}/projects", json={"name": project})
    assert r.status_code == 201, r.text
    r = await user.client.post(f"/v1/orgs/{org}/projects/{project}/repos", json={"name": repo, **body})
    assert r.status_code == 201, r.text
    return dict(r.json())


async def new_token(user: User, **limits: object) -> str:
    r = await user.client.post("/v1/me/tokens", json={"name": "git", **limits})
    assert r.status_code == 201, r.text
    return str(r.json()["token"])
