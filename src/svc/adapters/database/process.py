"""The private database cluster: a PostgreSQL server that `svc serve` initialises, supervises and
stops when no SVC_PROJECT_DB_ADMIN_URL is set and PostgreSQL's server binaries are installed.
Everything it has lives in one directory (SVC_PROJECT_DB_DIR; by default SVC_DATA_DIR/projectdb,
or /var/lib/svc/projectdb-<hash of the data dir> when svc runs as root):

    data/         the cluster (initdb: scram-sha-256 for every connection, UTF8, locale C)
    admin.pw      the password of svc's administrator role (svc_admin), made at initdb (0600)
    port          the TCP port it listens on (127.0.0.1), chosen at initdb and kept: the
                  endpoint the projects' clients hold stays the same across restarts
    postgres.log  what the server says

It runs in the foreground as svc's child under the supervisor (as the `postgres` system user when
svc runs as root: PostgreSQL refuses to run as root), stopped with SIGINT (PostgreSQL's fast
shutdown: sessions ended, everything written). It is reached over TCP only (no unix socket). As
the postgres user it must be able to pass through every directory above its own (PostgreSQL
resolves its paths): a data dir under /root is refused with words saying so. `svc serve` runs
with umask 077, so the directories it makes on the way are set 0755 explicitly (they hold nothing
but the cluster's directory, which stays 0700), and /var/lib/svc, svc's own, is repaired to 0755
if an earlier start left it 0700."""

from __future__ import annotations

import asyncio
import os
import pwd
import secrets
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import asyncpg

from svc.supervisor import Port, ProcessError, ProcessSpec, Supervisor, find_binary, free_tcp_port

# Debian's server binaries (postgresql-<version>), newest first by the supervisor's search.
SEARCH = ("/usr/lib/postgresql/*/bin",)
ADMIN = "svc_admin"
START_SECONDS = 30.0


def reachable_by(path: Path, user: str) -> bool:
    """Whether `user` may pass through every directory above `path` (search permission)."""
    account = pwd.getpwnam(user)
    groups = {account.pw_gid, *os.getgrouplist(user, account.pw_gid)}
    for parent in path.resolve().parents:
        st = parent.stat()
        if st.st_uid == account.pw_uid:
            allowed = st.st_mode & 0o100
        elif st.st_gid in groups:
            allowed = st.st_mode & 0o010
        else:
            allowed = st.st_mode & 0o001
        if not allowed:
            return False
    return True


def made_parents(root: Path) -> None:
    """Make the directories above `root` that do not exist, each 0755 whatever the process's umask
    (`svc serve` runs with 077, which would leave them passable by svc's user alone)."""
    missing = [p for p in root.parents if not p.exists()]
    root.parent.mkdir(parents=True, exist_ok=True)
    for made in reversed(missing):  # from the top down
        os.chmod(made, 0o755)  # noqa: S103 - the point: passed through by the cluster's user


def find_postgres() -> str | None:
    """The PostgreSQL server binary (Debian's, or one on PATH); None when it is not installed."""
    return find_binary("postgres", SEARCH)


@dataclass(frozen=True)
class ClusterLayout:
    root: Path

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def password_file(self) -> Path:
        return self.root / "admin.pw"

    @property
    def port_file(self) -> Path:
        return self.root / "port"

    @property
    def log(self) -> Path:
        return self.root / "postgres.log"


class PrivateCluster:
    """The cluster's files, its first initdb, and its supervised server."""

    def __init__(self, root: Path, binary: str, *, user: str | None = None, max_connections: int = 200,
                 own_parent: bool = False) -> None:
        self.layout = ClusterLayout(root)
        # The directory above the cluster is svc's alone (/var/lib/svc, made for the clusters):
        # a start makes it passable for the cluster's user whatever an earlier start left.
        self.own_parent = own_parent
        self.binary = binary
        self.bin_dir = Path(binary).parent
        self.user = user
        self.max_connections = max_connections
        self.port = 0
        self.supervisor: Supervisor | None = None

    @property
    def admin_url(self) -> str:
        password = self.layout.password_file.read_text().strip()
        return f"postgresql://{ADMIN}:{quote(password, safe='')}@127.0.0.1:{self.port}/postgres"

    async def start(self) -> None:
        await asyncio.to_thread(self._initialise)
        self.port = int(self.layout.port_file.read_text())
        layout = self.layout
        args = ("-D", str(layout.data), "-p", str(self.port), "-c", "unix_socket_directories=",
                "-c", "listen_addresses=127.0.0.1", "-c", f"max_connections={self.max_connections}")
        self.supervisor = Supervisor(ProcessSpec(
            name=f"project databases (PostgreSQL on 127.0.0.1:{self.port})", binary=self.binary, args=args,
            log=layout.log, pid_file=layout.root / "postgres.pid", user=self.user, cwd=layout.root,
            env={"PATH": os.defpath, "LANG": "C.UTF-8"}, ports=(Port("127.0.0.1", self.port),),
            ready=self._ready, start_seconds=START_SECONDS, stop_signal=signal.SIGINT, stop_seconds=30.0))
        await self.supervisor.start()
        if not self.supervisor.running:
            raise ProcessError(f"the private database cluster did not start: {self.supervisor.last_log()}")

    async def stop(self) -> None:
        if self.supervisor is not None:
            await self.supervisor.stop()

    async def _ready(self) -> bool:
        try:
            con = await asyncpg.connect(self.admin_url, timeout=2)
        except (TimeoutError, OSError, asyncpg.PostgresError):
            return False
        await con.close()
        return True

    def _initialise(self) -> None:
        """initdb at first start (made aside, moved into place: a start killed halfway leaves
        no half cluster), with svc's administrator's password from a file only it reads."""
        layout = self.layout
        made_parents(layout.root)
        if self.own_parent and layout.root.parent.stat().st_uid == os.geteuid():
            os.chmod(layout.root.parent, 0o755)  # noqa: S103 - holds only the clusters' 0700 dirs
        layout.root.mkdir(mode=0o700, exist_ok=True)
        os.chmod(layout.root, 0o700)  # (whatever the umask: the cluster's own files are its user's alone)
        if self.user is not None and not reachable_by(layout.root, self.user):
            raise ProcessError(f"the user {self.user} cannot reach {layout.root} (a directory above it lets only "
                               "its owner through): set SVC_PROJECT_DB_DIR to a directory it can reach, or "
                               "SVC_PROJECT_DB_ADMIN_URL")
        owner = pwd.getpwnam(self.user) if self.user is not None else None
        if owner is not None:
            os.chown(layout.root, owner.pw_uid, owner.pw_gid)
        if (layout.data / "PG_VERSION").is_file():
            return
        password = secrets.token_urlsafe(24)
        partial = layout.root / "data.partial"
        shutil.rmtree(partial, ignore_errors=True)
        pwfile = layout.root / ".pwfile"
        fd = os.open(pwfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(password + "\n")
        if owner is not None:
            os.chown(pwfile, owner.pw_uid, owner.pw_gid)
        try:
            done = subprocess.run(
                [str(self.bin_dir / "initdb"), "-D", str(partial), "-U", ADMIN, "--auth=scram-sha-256",
                 f"--pwfile={pwfile}", "-E", "UTF8", "--locale=C", "--no-instructions"],
                capture_output=True, text=True, user=self.user, cwd=layout.root,
                env={"PATH": os.defpath, "LANG": "C.UTF-8"},
                timeout=120, check=False)
        finally:
            pwfile.unlink(missing_ok=True)
        if done.returncode != 0:
            shutil.rmtree(partial, ignore_errors=True)
            raise ProcessError(f"initdb failed: {(done.stderr or done.stdout).strip()[-500:]}")
        fd = os.open(layout.password_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(password)
        layout.port_file.write_text(str(free_tcp_port("127.0.0.1")))
        partial.rename(layout.data)
