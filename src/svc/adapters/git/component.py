"""The git node as a component: repositories under SVC_DATA_DIR/git, served by the git CLI, and its
SSH server (SVC_SSH_PORT), which the node starts under the supervisor."""

from __future__ import annotations

from svc.adapters.git import build_git_node, off_reason
from svc.adapters.git.port import SshPortInUse
from svc.adapters.git.settings import GitSettings
from svc.kit.hosts import local_address
from svc.settings import Config
from svc.supervisor import host_port
from svc.supervisor.component import Component, Launch, Line


def _banner(config: Config, launch: Launch) -> list[Line]:
    settings = config.settings_of(GitSettings)
    off = off_reason(config)
    if off is not None:
        return [Line("git", off)]
    ssh = (f"SSH on {host_port(local_address(settings.ssh_host), settings.ssh_port)}" if settings.ssh_port
           else "no SSH (set SVC_SSH_PORT to serve git over SSH)")
    base = config.settings.public_url.rstrip("/")
    return [Line("git", f"over HTTPS at {base}/git/<org>/<project>/<repo>.git; {ssh}")]


def _explain(exc: Exception) -> str:
    assert isinstance(exc, SshPortInUse)
    return f"the git SSH port {exc.address} is in use; stop what uses it or choose another with SVC_SSH_PORT"


COMPONENT = Component(name="git", settings=GitSettings, slot="git", build=build_git_node, off=off_reason,
                      banner=_banner, explains={SshPortInUse: _explain}, processes=("git's SSH server",))
