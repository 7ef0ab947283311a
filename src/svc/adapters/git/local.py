"""The git node on this machine: bare repositories under SVC_DATA_DIR/git/repos/<id>.git, served by
the git CLI (http-backend, upload-pack, receive-pack) and read by it (reading.py), every git process
started by runner.py.

Every git process the node starts runs with the node's hooks (core.hooksPath, given in the
environment, so no repository carries a path of this machine) and the gate's address, so every push
is checked and recorded by svc whatever transport carried it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import AsyncIterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from svc.adapters.git import reading, runner
from svc.adapters.git.gate import Gate
from svc.adapters.git.http_backend import CgiExchange
from svc.adapters.git.port import (
    Blob,
    Commit,
    GitGatekeeper,
    GitService,
    GitUnavailable,
    HttpRequest,
    HttpResponse,
    Pusher,
    Ref,
    SshPortInUse,
    Tree,
)
from svc.adapters.git.process import host_key_pem, start_ssh
from svc.supervisor import PortInUse, Supervisor, host_port

_HOOKS = ("pre-receive", "post-receive")
DEFAULT_MAX_PUSH_BYTES = 512 * 1024 * 1024  # SVC_REPO_MAX_PUSH_BYTES's default
UPKEEP_SECONDS = 30.0  # `git init` of a repository, `git symbolic-ref` of its default branch
# Set in every repository when it is made: reflogs keep what a force-push replaced (so `git gc`
# keeps it 90 days and its id can be fetched back); fetching by any commit id is allowed for that.
# Appended to the config `git init` wrote (git reads a section given twice as one), rather than one
# `git config` process per key: a repository's first access is one process.
_REPO_CONFIG = """
[core]
\tlogAllRefUpdates = always
[uploadpack]
\tallowAnySHA1InWant = true
[receive]
\tfsckObjects = true
[gc]
\tauto = 0
"""


def git_binary() -> str | None:
    return shutil.which("git")


class LocalGitNode:
    def __init__(self, root: Path, *, git: str | None = None, ssh_port: int | None = None,
                 ssh_host: str = "127.0.0.1", max_push_bytes: int = DEFAULT_MAX_PUSH_BYTES) -> None:
        self.root = root
        self.max_push_bytes = max_push_bytes
        self.ssh_host = ssh_host
        self.repos = root / "repos"
        self.hooks = root / "hooks"
        self.git = git or git_binary() or ""
        self.ssh_port = ssh_port
        self._gate: Gate | None = None
        self._ssh: Supervisor | None = None

    # --- life ---

    async def start(self, gatekeeper: GitGatekeeper, *, ssh_host_key: bytes | None = None) -> None:
        if not self.git:
            raise GitUnavailable("git is not installed on this machine")
        self.repos.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._write_hooks()
        self._gate = Gate(gatekeeper, self.launch, self.ensure)
        await self._gate.start()
        if self.ssh_port and ssh_host_key is not None:
            assert self._gate.path is not None
            try:
                self._ssh = await start_ssh(host=self.ssh_host, port=self.ssh_port, host_key=ssh_host_key,
                                            gate=self._gate.path, root=self.root / "ssh")
            except PortInUse:
                await self._gate.stop()
                raise SshPortInUse(host_port(self.ssh_host, self.ssh_port)) from None

    async def stop(self) -> None:
        if self._ssh is not None:
            await self._ssh.stop()
            self._ssh = None
        if self._gate is not None:
            await self._gate.stop()
            self._gate = None

    def new_ssh_host_key(self) -> bytes:
        return host_key_pem()

    @property
    def gate(self) -> Gate:
        if self._gate is None:
            raise GitUnavailable("the git node is not started")
        return self._gate

    def _write_hooks(self) -> None:
        """The hooks, from hook.py, run by this Python without site packages (-IS: fast, and only
        the standard library)."""
        self.hooks.mkdir(parents=True, exist_ok=True, mode=0o700)
        source = (Path(__file__).parent / "hook.py").read_text()
        script = f"#!{sys.executable} -IS\n{source}"
        for name in _HOOKS:
            path = self.hooks / name
            if not path.exists() or path.read_text() != script:
                temporary = path.with_suffix(".new")
                temporary.write_text(script)
                temporary.chmod(stat.S_IRWXU)
                os.replace(temporary, path)

    def environment(self, push: str | None, max_input: int | None = None) -> dict[str, str]:
        """What every git process of the node runs with: a clean git environment, the node's hooks and
        the gate; pushes are allowed over HTTP only with a push id (receive-pack needs REMOTE_USER too).
        receive.maxInputSize bounds a push where git reads it: index-pack stops past it and the pusher
        reads "fatal: pack exceeds maximum allowed size". `max_input`: what the gatekeeper let this
        push bring (the push bound, or less: what is left of the org's quota). receive.unpackLimit=1
        keeps every push as the pack it came in (index-pack), never one file per object: a push of
        many small objects costs two files, not an inode (and a block) each."""
        bound = self.max_push_bytes if max_input is None else max(1, min(max_input, self.max_push_bytes))
        config = {"core.hooksPath": str(self.hooks), "http.receivepack": "true" if push else "false",
                  "http.uploadpack": "true", "receive.maxInputSize": str(bound), "receive.unpackLimit": "1"}
        return runner.environment(home=self.root, config=config, extra=self.gate.hook_env(push))

    def launch(self, repo_id: str, service: GitService, push: str | None,
               max_input: int | None) -> tuple[list[str], dict[str, str]]:
        """An SSH command's git process: argv and environment."""
        return [self.git, service, str(self.repo_dir(repo_id))], self.environment(push, max_input)

    # --- repositories ---

    def repo_dir(self, repo_id: str) -> Path:
        if not repo_id.replace("_", "").isalnum():
            raise ValueError(f"not a repository id: {repo_id!r}")
        return self.repos / f"{repo_id}.git"

    async def ensure(self, repo_id: str, default_branch: str) -> None:
        path = self.repo_dir(repo_id)
        if (path / "HEAD").exists():
            return
        # Made beside and moved in place: two first accesses at once never see half a repository.
        # Its own name each time: two first accesses at once in this process never share it.
        making = Path(tempfile.mkdtemp(prefix=f"{path.name}.making-", dir=self.repos))
        # No template: git's sample hooks and description (80 KiB of blocks) are no use here (the
        # node's hooks are core.hooksPath) and would count against the org's quota.
        await self._git("init", "--quiet", "--bare", "--template=", f"--initial-branch={default_branch}",
                        str(making))
        with (making / "config").open("a") as config:
            config.write(_REPO_CONFIG)
        try:
            os.rename(making, path)
        except OSError:
            shutil.rmtree(making, ignore_errors=True)  # another access made it first
            if not (path / "HEAD").exists():
                raise

    async def set_default_branch(self, repo_id: str, branch: str) -> None:
        path = self.repo_dir(repo_id)
        if (path / "HEAD").exists():
            await self._git("--git-dir", str(path), "symbolic-ref", "HEAD", f"refs/heads/{branch}")

    async def remove(self, repo_id: str) -> None:
        path = self.repo_dir(repo_id)
        if path.exists():
            # Renamed first so a half-removed repository is never served.
            gone = path.with_name(f"{path.name}.removing")
            os.replace(path, gone)
            await asyncio.to_thread(shutil.rmtree, gone, True)

    async def disk_bytes(self, repo_ids: Sequence[str]) -> int:
        paths = [self.repo_dir(repo_id) for repo_id in repo_ids]
        return await asyncio.get_running_loop().run_in_executor(_DISK_WALKERS, _disk_bytes, paths)

    async def ref_count(self, repo_id: str) -> int:
        return await reading.ref_count(self.repo_dir(repo_id))

    async def _git(self, *args: str) -> None:
        await runner.output([self.git, *args], runner.environment(home=self.root), seconds=UPKEEP_SECONDS,
                            limit=64 * 1024)

    # --- reading ---

    async def refs(self, repo_id: str) -> list[Ref]:
        return await reading.refs(self.repo_dir(repo_id))

    async def resolve(self, repo_id: str, ref: str) -> str:
        return await reading.resolve(self.repo_dir(repo_id), ref)

    async def tree(self, repo_id: str, ref: str, path: str) -> Tree:
        return await reading.tree(self.repo_dir(repo_id), ref, path)

    async def blob(self, repo_id: str, ref: str, path: str) -> Blob:
        return await reading.blob(self.repo_dir(repo_id), ref, path)

    async def commits(self, repo_id: str, ref: str, limit: int) -> list[Commit]:
        return await reading.commits(self.repo_dir(repo_id), ref, limit)

    async def has_path(self, repo_id: str, commit: str, path: str) -> bool:
        return await reading.has_path(self.repo_dir(repo_id), commit, path)

    async def archive(self, repo_id: str, commit: str) -> bytes:
        return await reading.archive(self.repo_dir(repo_id), commit)

    # --- serving ---

    def serve_http(self, repo_id: str, request: HttpRequest, body: AsyncIterator[bytes],
                   pusher: Pusher | None) -> CgiExchange:
        gate = self.gate
        push = gate.open_push(pusher) if pusher is not None else None
        return _ClosingExchange(self, self.repo_dir(repo_id).name, request, body, push)


# Walks of an org's repositories on disk (one per push admitted and per pre-receive hook), in
# threads of their own: a large org's walk waits here, never in the pool svc's other work uses.
_DISK_WALKERS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="svc-git-disk")


def _disk_bytes(paths: Sequence[Path]) -> int:
    """The space allocated to the files and directories under each path (a repository not made yet:
    0), the incoming objects of pushes in progress included (their quarantine is inside the
    repository). Blocks, not sizes: ten thousand one-byte files take 40 MB of disk, not 10 KB."""
    total = 0
    for path in paths:
        for folder, dirs, files in os.walk(path):
            for name in (*dirs, *files):
                with contextlib.suppress(OSError):  # gone meanwhile (a pack replaced, a push ended)
                    total += os.lstat(os.path.join(folder, name)).st_blocks * 512
    return total


class _ClosingExchange(CgiExchange):
    """The exchange of a node, which asks the gatekeeper before a push starts (Refused: nothing
    runs) and forgets its push id when it ends."""

    def __init__(self, node: LocalGitNode, name: str, request: HttpRequest, body: AsyncIterator[bytes],
                 push: str | None) -> None:
        super().__init__(node.git, node.repos, name, request, body, node.environment(push))
        self._node, self._name, self._request = node, name, request
        self._gate_of_push = node.gate
        self._push = push

    async def __aenter__(self) -> HttpResponse:
        if self._push is not None:
            try:
                # The POST that carries the pack is admitted; the GET before it (the refs) only asked.
                receiving = self._request.method == "POST" and self._request.path_info.endswith("/git-receive-pack")
                allowance = await self._gate_of_push.admit(self._push, receiving=receiving)
            except BaseException:
                self._gate_of_push.close_push(self._push)
                raise
            self._env = self._cgi_env(self._node.repos, self._name, self._request,
                                      self._node.environment(self._push, allowance))
        try:
            return await super().__aenter__()
        except BaseException:
            self._gate_of_push.close_push(self._push)  # git did not start: the push is over (once)
            raise

    async def __aexit__(self, *exc: object) -> None:
        try:
            await super().__aexit__(*exc)
        finally:
            self._gate_of_push.close_push(self._push)
