"""The node's SSH server (ssh_server.py) as svc runs it: a ProcessSpec for its supervisor, and its
host key. Everything on disk lives under the directory the caller gives (SVC_DATA_DIR/git/ssh):

    host_key    the host key, written 0600 before each start and removed once the server has read
                it (svc keeps it sealed in its store and passes it to `ssh_spec`)
    ssh.log     what the server says: one line per connection's outcome
    ssh.pid     its pid, to replace a server a killed svc left running

The server asks svc through the node's gate: the node is started first, its gate's path given here
(a node started again has a new gate: its server is started again with it)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from pathlib import Path

from svc.supervisor import Port, ProcessSpec, Supervisor

log = logging.getLogger("svc.git")

MODULE = "svc.adapters.git.ssh_server"
START_SECONDS = 10.0
# The server lets running commands finish for DRAIN_SECONDS (8) after SIGTERM, then ends them.
STOP_SECONDS = 10.0
_BANNER_SECONDS = 1.0


def host_key_pem() -> bytes:
    """A new ed25519 host key, an OpenSSH private key file's bytes (what `--host-key` reads)."""
    import asyncssh  # loaded where a key is made or read, not with the git adapter (`svc admin`)

    return bytes(asyncssh.generate_private_key("ssh-ed25519").export_private_key("openssh"))


def host_key_fingerprint(pem: bytes) -> str:
    """"SHA256:..." as `ssh-keygen -lf` prints it: what users compare on their first connection."""
    import asyncssh

    return str(asyncssh.import_private_key(pem).get_fingerprint("sha256"))


def ssh_spec(*, host: str, port: int, host_key: bytes, gate: Path, root: Path,
             python: str = sys.executable) -> ProcessSpec:
    """The SSH server on host:port, asking the gate at `gate`, its files under `root`."""
    key_file = root / "host_key"
    args = ("-m", MODULE, "--host", host, "--port", str(port), "--host-key", str(key_file), "--gate", str(gate))

    async def prepare() -> None:
        await asyncio.to_thread(_write_key, key_file, host_key)

    async def ready() -> bool:
        if not await ssh_banner(host, port):
            return False
        # Read at its start: on disk no longer than that (written again before the next start).
        key_file.unlink(missing_ok=True)
        return True

    def owns(cmdline: list[str]) -> bool:
        # Ours when it serves with our host key file (the gate's path changes with each svc run).
        return cmdline[1:3] == ["-m", MODULE] and "--host-key" in cmdline and \
            cmdline[cmdline.index("--host-key") + 1:][:1] == [str(key_file)]

    return ProcessSpec(
        name=f"git SSH server ({Port(host, port).address})", binary=python, args=args, log=root / "ssh.log",
        pid_file=root / "ssh.pid", env=_environment(), cwd=root, ports=(Port(host, port),), prepare=prepare,
        ready=ready, owns=owns, start_seconds=START_SECONDS, stop_seconds=STOP_SECONDS)


async def start_ssh(*, host: str, port: int, host_key: bytes, gate: Path, root: Path) -> Supervisor:
    """Start the SSH server and keep it running; stop it with the returned supervisor's stop().
    Raises PortInUse (nothing running) when another program holds host:port; any other failed start
    is logged in one line and retried with backoff, as is a server that dies."""
    supervisor = Supervisor(ssh_spec(host=host, port=port, host_key=host_key, gate=gate, root=root), logger=log)
    await supervisor.start()
    return supervisor


async def ssh_banner(host: str, port: int, seconds: float = _BANNER_SECONDS) -> bool:
    """Whether an SSH server answers on host:port (its banner: "SSH-2.0-...")."""
    target = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)  # noqa: S104 - reached on loopback
    try:
        async with asyncio.timeout(seconds):
            reader, writer = await asyncio.open_connection(target, port)
            try:
                line = await reader.readline()
            finally:
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()
    except (OSError, TimeoutError):
        return False
    return line.startswith(b"SSH-2.0-")


def _write_key(path: Path, pem: bytes) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(pem)
    tmp.replace(path)


def _environment() -> dict[str, str]:
    """Only what it needs (never svc's secrets): git's environment comes from the gate."""
    env = {"PATH": os.environ.get("PATH", os.defpath), "LANG": "C.UTF-8"}
    # The same svc as this one, when it runs from a checkout rather than an installed package.
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env
