"""Git hosting's settings: the git CLI and its SSH server (docs/repos.md)."""

from __future__ import annotations

from pydantic import Field

from svc.settings import ComponentSettings


class GitSettings(ComponentSettings):
    # Repositories under SVC_DATA_DIR/git, served by the git CLI; off (or git not installed): the
    # repository routes answer 503 git_unavailable.
    git_enabled: bool = True
    # The git SSH server's port (0: none, git over HTTPS only).
    ssh_port: int = Field(default=0, ge=0, le=65535)
    # The address the git SSH server binds.
    ssh_host: str = "127.0.0.1"
    # The host named in sshUrl (default: SVC_PUBLIC_URL's host).
    ssh_public_host: str | None = None
    # What one push may send (git's receive.maxInputSize: git stops reading past it), in bytes.
    repo_max_push_bytes: int = Field(default=512 * 1024**2, ge=1)
