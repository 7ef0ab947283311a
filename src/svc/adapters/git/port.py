"""The git node port: where projects' repositories live and what svc asks of them (docs/repos.md).

A node keeps bare repositories by id (a rename touches no disk), serves git's smart protocols for
them (HTTP through the real `git http-backend`, SSH through its SSH server) and reads them for the
dashboard's browser and for deploy on push. Who may do what is not the node's business: svc
decides (the `GitGatekeeper` below, implemented by the repos area) and the node asks it, for every
SSH connection and for every push's receive hooks, over its gate (gate.py). The areas import this
module only; local.py is the node on this machine's disk and git CLI."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

# git's all-zero object id: the `old` of a created ref, the `new` of a deleted one.
ZERO_ID = "0" * 40

TREE_LIMIT = 1000  # entries listed, then `truncated`
BLOB_LIMIT = 1024 * 1024  # bytes: a larger blob is not read (`too_large`)
COMMITS_LIMIT = 200

GitService = Literal["upload-pack", "receive-pack"]
Transport = Literal["http", "ssh"]


class GitUnavailable(Exception):
    """The node cannot serve: git is not installed here, or the node is not configured."""


class GitUnreachable(Exception):
    """The node did not answer (its process or disk failed); the same call may succeed later."""


class SshPortInUse(Exception):
    """The SSH server's port is held by another program (`svc serve` says so in one line)."""

    def __init__(self, address: str) -> None:
        super().__init__(address)
        self.address = address


class NoRef(Exception):
    """The ref (branch, tag or commit id) is not in the repository."""


class NoPath(Exception):
    """The path is not in the tree at that ref (or escapes it)."""


class ArchiveTooLarge(Exception):
    """The commit's tar.gz is larger than the limit it was asked for."""


@dataclass(frozen=True)
class Ref:
    name: str  # refs/heads/main, refs/tags/v1
    commit: str


@dataclass(frozen=True)
class TreeEntry:
    name: str
    path: str
    type: Literal["blob", "tree"]
    size: int | None  # blobs only


@dataclass(frozen=True)
class Tree:
    entries: list[TreeEntry]
    truncated: bool


@dataclass(frozen=True)
class Blob:
    path: str
    size: int
    binary: bool
    too_large: bool
    content: str | None  # None when binary or too large


@dataclass(frozen=True)
class Commit:
    id: str
    message: str  # the first line
    author: str  # "Name <email>"
    at: str  # ISO 8601, the author date


@dataclass(frozen=True)
class RefChange:
    """One line of a push as the receive hooks see it."""

    old: str
    new: str
    ref: str


@dataclass(frozen=True)
class Pusher:
    """Who a push is from and through what: the node hands it back to the gatekeeper's hooks."""

    repo_id: str
    user_id: str
    name: str
    transport: Transport


@dataclass(frozen=True)
class SshAccess:
    """What the gatekeeper allows an SSH command: the repository and, for a push, who pushes."""

    repo_id: str
    default_branch: str
    service: GitService
    pusher: Pusher | None  # set for receive-pack


class Refused(Exception):
    """The gatekeeper's no, in words the git client shows its user ("remote: ..." or "fatal: ...")."""


@dataclass(frozen=True)
class HookAnswer:
    """What a receive hook tells the pusher (each line shown as "remote: ...")."""

    lines: list[str] = field(default_factory=list)


class GitGatekeeper(Protocol):
    """svc's side of the node: authorization of SSH, and what a push means (implemented by the
    repos area; every call reads the store, so a deleted key or a revoked token stops at once)."""

    async def ssh_key_known(self, fingerprint: str) -> bool: ...

    async def authorize_ssh(self, fingerprint: str, service: GitService, path: str) -> SshAccess:
        """`path` as the client sent it ("org/project/repo.git"); raises Refused."""
        ...

    async def before_push(self, pusher: Pusher, changes: Sequence[RefChange], incoming_bytes: int) -> HookAnswer:
        """The pre-receive hook: raises Refused to refuse the whole push. `incoming_bytes`: what the
        push brought, on disk in its quarantine (git's objects not yet in the repository)."""
        ...

    async def admit_push(self, pusher: Pusher, push: str | None) -> int:
        """Whether a push may start now, before git reads a byte of it: the bytes it may bring
        (its receive.maxInputSize); raises Refused. `push` set: the push is admitted and counted as
        in flight until `push_ended(push)`; None: only asked (git's first request of a push)."""
        ...

    def push_ended(self, push: str) -> None:
        """An admitted push's git process has ended."""
        ...

    async def after_push(self, pusher: Pusher, changes: Sequence[RefChange]) -> HookAnswer:
        """The post-receive hook: the refs are updated; record them, deploy, say so."""
        ...


@dataclass(frozen=True)
class HttpRequest:
    """A smart-HTTP request as `git http-backend` takes it (CGI): the path after the repository,
    e.g. "/info/refs" or "/git-receive-pack"."""

    method: str
    path_info: str
    query: str
    content_type: str | None
    content_encoding: str | None
    git_protocol: str | None  # the Git-Protocol header (protocol v2)
    remote_user: str | None
    remote_addr: str | None


@dataclass
class HttpResponse:
    status: int
    headers: list[tuple[str, str]]
    body: AsyncIterator[bytes]


class GitNode(Protocol):
    # Where the node's SSH server listens (None: SSH is off on this node).
    ssh_port: int | None

    async def start(self, gatekeeper: GitGatekeeper, *, ssh_host_key: bytes | None = None) -> None:
        """Open the gate the node's hooks and SSH server ask svc through; start the SSH server
        (when the node has an SSH port) with this host key (OpenSSH private key format)."""
        ...

    def new_ssh_host_key(self) -> bytes:
        """A new host key for the SSH server (ed25519, OpenSSH private key format), made once and
        kept by svc (sealed in the store)."""
        ...

    async def stop(self) -> None: ...

    async def ensure(self, repo_id: str, default_branch: str) -> None:
        """The bare repository exists (made on first access, HEAD at the default branch)."""
        ...

    async def set_default_branch(self, repo_id: str, branch: str) -> None: ...

    async def remove(self, repo_id: str) -> None:
        """The disk copy is gone (nothing when there was none)."""
        ...

    async def refs(self, repo_id: str) -> list[Ref]: ...

    async def resolve(self, repo_id: str, ref: str) -> str:
        """A branch, tag or commit id -> the commit id; raises NoRef."""
        ...

    async def tree(self, repo_id: str, ref: str, path: str) -> Tree: ...

    async def blob(self, repo_id: str, ref: str, path: str) -> Blob: ...

    async def commits(self, repo_id: str, ref: str, limit: int) -> list[Commit]: ...

    async def has_path(self, repo_id: str, commit: str, path: str) -> bool: ...

    async def disk_bytes(self, repo_ids: Sequence[str]) -> int:
        """What these repositories hold on disk together (allocated blocks, not file sizes), pushes
        in progress included."""
        ...

    async def ref_count(self, repo_id: str) -> int:
        """How many refs the repository holds, whatever their namespace."""
        ...

    async def archive(self, repo_id: str, commit: str) -> bytes:
        """The commit's tree as a gzipped tar (a deployment bundle when it holds svc.json)."""
        ...

    def serve_http(self, repo_id: str, request: HttpRequest, body: AsyncIterator[bytes],
                   pusher: Pusher | None) -> AbstractHttpExchange:
        """Run `git http-backend` for one request; `pusher` set when the request may push."""
        ...


class AbstractHttpExchange(Protocol):
    """One smart-HTTP request in flight: enter it to get the response, leave it to end the process."""

    async def __aenter__(self) -> HttpResponse: ...

    async def __aexit__(self, *exc: object) -> None: ...
