"""adapters/git/ssh_server.py run as svc runs it (process.py, through the supervisor), in front of a
real LocalGitNode whose gatekeeper is a stub, with the real git and ssh clients: clone, push (the
hooks' answer shown, the ref change recorded), clone again; protocol v2; an unknown or deleted key,
another command, a shell and a refused path, each refused in words."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from svc.adapters.git.local import LocalGitNode
from svc.adapters.git.port import GitService, HookAnswer, Pusher, RefChange, Refused, SshAccess
from svc.adapters.git.process import host_key_pem, ssh_banner
from svc.adapters.git.ssh_server import ask_gate
from svc.supervisor import Supervisor
from tests.support import components
from tests.support.ports import free_port
from tests.support.smtp import eventually

pytestmark = components.SSH_CLIENTS

PATH = "o/p/r.git"
NO_SUCH = "svc: no repository o/p/nope.git here (or you may not see it)"


@dataclass
class StubGatekeeper:
    known: set[str] = field(default_factory=set)
    asked: list[tuple[str, GitService, str]] = field(default_factory=list)
    before: list[tuple[Pusher, list[RefChange]]] = field(default_factory=list)
    after: list[tuple[Pusher, list[RefChange]]] = field(default_factory=list)

    async def ssh_key_known(self, fingerprint: str) -> bool:
        return fingerprint in self.known

    async def authorize_ssh(self, fingerprint: str, service: GitService, path: str) -> SshAccess:
        self.asked.append((fingerprint, service, path))
        if fingerprint not in self.known:
            raise Refused("svc: this key is not known")
        if path != PATH:
            raise Refused(NO_SUCH)
        pusher = Pusher("repo_test1", "user_1", "Ada", "ssh") if service == "receive-pack" else None
        return SshAccess(repo_id="repo_test1", default_branch="main", service=service, pusher=pusher)

    async def admit_push(self, pusher: Pusher, push: str | None) -> int:
        return 512 * 1024 * 1024

    def push_ended(self, push: str) -> None:
        pass

    async def before_push(self, pusher: Pusher, changes: Sequence[RefChange], incoming_bytes: int) -> HookAnswer:
        self.before.append((pusher, list(changes)))
        return HookAnswer(["deployed v1"])

    async def after_push(self, pusher: Pusher, changes: Sequence[RefChange]) -> HookAnswer:
        self.after.append((pusher, list(changes)))
        return HookAnswer(["deployed v1"])


@dataclass
class Ran:
    code: int
    out: str
    err: str


@dataclass
class Site:
    root: Path
    port: int
    key: Path  # a key the stub knows
    fingerprint: str
    gatekeeper: StubGatekeeper
    node: LocalGitNode
    server: Supervisor

    def ssh_command(self, key: Path | None = None) -> str:
        return (f"ssh -i {key or self.key} -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=no "
                f"-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -p {self.port}")

    async def git(self, *args: str, cwd: Path | None = None, key: Path | None = None,
                  trace: bool = False) -> Ran:
        env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(self.root), "LC_ALL": "C",
               "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0",
               "GIT_SSH_COMMAND": self.ssh_command(key), "GIT_AUTHOR_NAME": "Ada",
               "GIT_AUTHOR_EMAIL": "ada@example.com", "GIT_COMMITTER_NAME": "Ada",
               "GIT_COMMITTER_EMAIL": "ada@example.com"}
        if trace:
            env["GIT_TRACE_PACKET"] = "1"
        return await run("git", *args, cwd=cwd or self.root, env=env)

    async def ssh(self, *command: str) -> Ran:
        return await run(*self.ssh_command().split(), "git@127.0.0.1", *command, cwd=self.root)

    def url(self, path: str = PATH) -> str:
        return f"git@127.0.0.1:{path}"


async def run(*argv: str, cwd: Path, env: dict[str, str] | None = None) -> Ran:
    # Never subprocess.run: the gate the server asks answers on this very event loop.
    process = await asyncio.create_subprocess_exec(*argv, cwd=cwd, env=env, stdin=asyncio.subprocess.DEVNULL,
                                                   stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode is not None
    return Ran(process.returncode, out.decode(errors="replace"), err.decode(errors="replace"))


async def new_key(path: Path) -> str:
    """A client key made by ssh-keygen; its fingerprint as ssh-keygen prints it."""
    made = await run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "test", "-f", str(path), cwd=path.parent)
    assert made.code == 0, made.err
    listed = await run("ssh-keygen", "-lf", f"{path}.pub", cwd=path.parent)
    return listed.out.split()[1]


@pytest.fixture(scope="module")
async def site(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Site]:
    root = tmp_path_factory.mktemp("ssh")
    gatekeeper = StubGatekeeper()
    fingerprint = await new_key(root / "id_known")
    gatekeeper.known.add(fingerprint)
    node = LocalGitNode(root / "node", ssh_port=free_port())
    await node.start(gatekeeper, ssh_host_key=host_key_pem())
    try:
        assert node.ssh_port is not None and node._ssh is not None
        yield Site(root, node.ssh_port, root / "id_known", fingerprint, gatekeeper, node, node._ssh)
    finally:
        await node.stop()


async def test_the_server_is_started_ready_and_keeps_no_host_key_on_disk(site: Site) -> None:
    assert site.server.running
    assert await ssh_banner("127.0.0.1", site.port)
    assert not (site.node.root / "ssh" / "host_key").exists()


async def test_clone_push_and_clone_again(site: Site) -> None:
    work = site.root / "work"
    cloned = await site.git("clone", site.url(), str(work))
    assert cloned.code == 0, cloned.err
    (work / "svc.json").write_text('{"name": "app"}\n')
    (work / "blob.bin").write_bytes(os.urandom(2 * 1024 * 1024))  # more than one SSH window, both ways
    assert (await site.git("add", ".", cwd=work)).code == 0
    assert (await site.git("commit", "-q", "-m", "first", cwd=work)).code == 0
    commit = (await site.git("rev-parse", "HEAD", cwd=work)).out.strip()

    pushed = await site.git("push", "origin", "main", cwd=work)

    assert pushed.code == 0, pushed.err
    assert "remote: deployed v1" in pushed.err
    pusher, changes = site.gatekeeper.after[-1]
    assert pusher == Pusher("repo_test1", "user_1", "Ada", "ssh")
    assert changes == [RefChange(old="0" * 40, new=commit, ref="refs/heads/main")]
    assert site.gatekeeper.before[-1][1] == changes
    assert (await site.node.resolve("repo_test1", "main")) == commit
    # The push id is forgotten once the session ends (the server's ssh-done).
    await eventually(lambda: _async(not site.node.gate._pushes), what="ssh-done")

    again = await site.git("clone", site.url(), str(site.root / "again"))
    assert again.code == 0, again.err
    assert (await site.git("rev-parse", "HEAD", cwd=site.root / "again")).out.strip() == commit
    assert (site.root / "again" / "blob.bin").read_bytes() == (work / "blob.bin").read_bytes()


async def test_protocol_v2_reaches_git(site: Site) -> None:
    v2 = await site.git("-c", "protocol.version=2", "ls-remote", site.url(), trace=True)

    assert v2.code == 0, v2.err
    # Only a server that got GIT_PROTOCOL=version=2 answers with the v2 capability advertisement.
    assert "< version 2" in v2.err


async def test_an_unknown_key_is_refused(site: Site) -> None:
    await new_key(site.root / "id_unknown")

    cloned = await site.git("clone", site.url(), str(site.root / "nope"), key=site.root / "id_unknown")

    assert cloned.code != 0
    assert "Permission denied" in cloned.err
    log = site.node.root / "ssh" / "ssh.log"
    await eventually(lambda: _async("refused: no key it offered is known" in log.read_text()),
                     what="the refusal logged")


async def test_a_deleted_key_stops_at_once(site: Site) -> None:
    fingerprint = await new_key(site.root / "id_deleted")
    site.gatekeeper.known.add(fingerprint)
    assert (await site.git("ls-remote", site.url(), key=site.root / "id_deleted")).code == 0

    site.gatekeeper.known.discard(fingerprint)

    refused = await site.git("ls-remote", site.url(), key=site.root / "id_deleted")
    assert refused.code != 0
    assert "Permission denied" in refused.err


async def test_another_command_is_refused_in_words(site: Site) -> None:
    ran = await site.ssh("ls")

    assert ran.code == 1
    assert "svc runs git over SSH only" in ran.err


async def test_a_shell_is_refused_in_words(site: Site) -> None:
    ran = await site.ssh()

    assert ran.code == 1
    assert "svc runs git over SSH only" in ran.err


async def test_a_refused_path_gives_the_gatekeepers_words(site: Site) -> None:
    cloned = await site.git("clone", site.url("o/p/nope.git"), str(site.root / "nope-path"))

    assert cloned.code != 0
    assert NO_SUCH in cloned.err
    assert site.gatekeeper.asked[-1] == (site.fingerprint, "upload-pack", "o/p/nope.git")


async def test_a_gate_that_does_not_answer_is_a_refusal(tmp_path: Path) -> None:
    assert await ask_gate(str(tmp_path / "missing"), {"op": "ssh-key", "fingerprint": "SHA256:x"}, 1.0) is None

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # never answers; the client gives up and closes
        writer.close()

    server = await asyncio.start_unix_server(silent, path=str(tmp_path / "gate"))
    try:
        assert await ask_gate(str(tmp_path / "gate"), {"op": "ssh-key", "fingerprint": "SHA256:x"}, 0.2) is None
    finally:
        server.close()


async def _async(value: bool) -> bool:
    return value

