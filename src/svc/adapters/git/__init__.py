"""The git node (port.py): repositories on this machine's disk, served and read by the git CLI
(local.py), with an SSH server svc's supervisor runs beside it (ssh_server.py, process.py)."""

from __future__ import annotations

from svc.adapters.git.local import LocalGitNode, git_binary
from svc.adapters.git.port import GitNode
from svc.adapters.git.settings import GitSettings
from svc.settings import Config

__all__ = ["build_git_node", "off_reason"]


def build_git_node(config: Config) -> GitNode | None:
    """The node under SVC_DATA_DIR/git; None when git hosting is off or git is missing."""
    settings = config.settings_of(GitSettings)
    if off_reason(config) is not None:
        return None
    return LocalGitNode(config.settings.data_dir / "git", ssh_port=settings.ssh_port or None,
                        ssh_host=settings.ssh_host, max_push_bytes=settings.repo_max_push_bytes)


def off_reason(config: Config) -> str | None:
    settings = config.settings_of(GitSettings)
    if not settings.git_enabled:
        return "off (SVC_GIT_ENABLED=false)"
    if git_binary() is None:
        return "off: git is not installed on this machine (apt-get install git)"
    return None
