"""`svc db create|info|connect|tokens` against a real server whose projects' databases live on a
real PostgreSQL cluster: psql opened by `svc db connect` with the project's credentials, `--url`,
token users, `--json` everywhere, bad input refused before anything changes."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest

from tests.cli.conftest import Cli, running_server, uniq
from tests.support import components
from tests.support.wait import WAIT_SECONDS


@pytest.fixture(scope="module")
def db_server(tmp_path_factory: pytest.TempPathFactory, project_cluster: Any) -> Iterator[str]:
    # Change checks every second, so a generation follows a write within the test's patience.
    with running_server(tmp_path_factory.mktemp("svc-db-server"), project_db_enabled="true",
                        project_db_admin_url=project_cluster.admin_url, database_backup_seconds="1") as url:
        yield url


@pytest.fixture
def me(db_server: str, tmp_path: Any) -> Cli:
    return Cli(db_server, tmp_path / "db-me")


def test_create_connect_and_token_users(me: Cli) -> None:
    slug = uniq("dbs")
    me.login(uniq("owner"))
    me.ok("orgs", "create", slug)
    me.ok("projects", "create", "web", "--org", slug)
    where = ("--project", "web", "--org", slug)

    assert me.ok("db", "info", *where, "--json").json() == {"db": False, "endpoint": None}
    assert "has no database" in me.ok("db", "info", *where).out
    assert me.fails("not_found", "db", "connect", "--url", *where)

    made = me.ok("db", "create", *where)
    assert "ready" in made.out and "env.db" in made.out
    creds = me.ok("db", "create", *where, "--json").json()  # again: the same password
    assert set(creds) == {"host", "port", "database", "user", "password", "sslmode"}
    assert creds["password"] not in made.out  # the human form does not print it
    assert me.ok("db", "info", *where, "--json").json()["endpoint"]["database"] == creds["database"]

    url = me.ok("db", "connect", "--url", *where).out.strip()
    assert url == (f"postgresql://{creds['user']}:{creds['password']}@{creds['host']}:{creds['port']}/"
                   f"{creds['database']}?sslmode={creds['sslmode']}")
    assert me.ok("db", "connect", *where, "--json").json()["url"] == url
    if shutil.which("psql"):
        # `svc db connect` becomes psql (a real process: exec replaces it) with the credentials.
        done = me.process("db", "connect", *where, input="select current_user;\n")
        assert done.code == 0, done.err
        assert creds["user"] in done.out

    token = me.ok("db", "tokens", "create", "--minutes", "5", *where, "--json").json()
    assert set(token) == {"user", "password", "expiresAt"}
    shown = me.ok("db", "tokens", "create", *where)
    assert "shown only now" in shown.out
    listed = me.ok("db", "tokens", "list", *where, "--json").json()["tokens"]
    assert token["user"] in {t["user"] for t in listed} and len(listed) == 2
    if shutil.which("psql"):
        env = {"PGHOST": creds["host"], "PGPORT": str(creds["port"]), "PGDATABASE": creds["database"],
               "PGUSER": token["user"], "PGPASSWORD": token["password"], "PATH": "/usr/bin:/bin"}
        ok = subprocess.run(["psql", "-X", "-A", "-t", "-c", "select current_user"], env=env, capture_output=True,
                            text=True, timeout=60, check=False)
        assert ok.returncode == 0 and ok.stdout.strip() == creds["user"], ok.stderr
    assert me.ok("db", "tokens", "delete", token["user"], *where, "--json").json()["deleted"] is True
    me.fails("not_found", "db", "tokens", "delete", token["user"], *where)
    assert token["user"] not in me.ok("db", "tokens", "list", *where).out

    # Bad input: refused by the CLI before a request (Typer's usage error, exit 2).
    bad = me("db", "tokens", "create", "--minutes", "0", *where)
    assert bad.code == 2 and "--minutes" in bad.err


def _sql(creds: dict[str, Any], sql: str) -> str:
    env = {"PGHOST": creds["host"], "PGPORT": str(creds["port"]), "PGDATABASE": creds["database"],
           "PGUSER": creds["user"], "PGPASSWORD": creds["password"], "PATH": "/usr/bin:/bin"}
    done = subprocess.run(["psql", "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _until_generations(me: Cli, where: tuple[str, ...], *, after: str) -> list[dict[str, Any]]:
    """The generations once the newest was taken after `after` (PostgreSQL's clock_timestamp()
    text) and all were checked."""
    since = datetime.fromisoformat(after.splitlines()[-1].replace(" ", "T"))
    deadline = time.monotonic() + WAIT_SECONDS
    gens: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        gens = me.ok("db", "generations", *where, "--json").json()["generations"]
        if gens and datetime.fromisoformat(gens[0]["createdAt"].replace("Z", "+00:00")) > since \
                and all(g["verified"] is not None for g in gens):
            return gens
        time.sleep(0.2)
    raise AssertionError(f"no checked generation taken after {after}: {gens}")


@components.PSQL
def test_generations_restore_export_and_delete(me: Cli) -> None:
    slug = uniq("dbr")
    me.login(uniq("owner"))
    me.ok("orgs", "create", slug)
    me.ok("projects", "create", "web", "--org", slug)
    where = ("--project", "web", "--org", slug)
    creds = me.ok("db", "create", *where, "--json").json()
    written = _sql(creds, "create table t (x int); insert into t values (1); select clock_timestamp()")
    # (A generation of the empty database may come first: the checks run every second.)
    first = _until_generations(me, where, after=written)[0]
    assert first["verified"] is True and first["epoch"] == 1
    table = me.ok("db", "generations", *where).out
    assert "scheduled" in table and "yes (" in table and "Last change check" in table

    _sql(creds, "insert into t values (2)")
    # Bad input and the confirmations a script must give.
    me.fails("confirm_needed", "db", "restore", "1", "1", *where)
    me.fails("not_found", "db", "restore", "1", "99", "--yes", *where)
    chosen = (str(first["epoch"]), str(first["seq"]))
    restored = me.ok("db", "restore", *chosen, "--yes", "--poll-seconds", "0.1", *where)
    assert f"Restored web's database to generation {first['epoch']}.{first['seq']}." in restored.out
    assert _sql(creds, "select string_agg(x::text, ',' order by x) from t") == "1"

    exported = me.ok("db", "export", *where, "--json").json()
    assert exported["key"].startswith("databases/")
    me.fails("confirm_mismatch", "db", "delete", "--confirm", "nope", *where)
    op = me.ok("db", "delete", "--confirm", "web", "--poll-seconds", "0.1", *where, "--json").json()
    assert (op["kind"], op["terminalCode"]) == ("delete", "ok")
    assert me.ok("db", "info", *where, "--json").json()["db"] is False
    kinds = [g["kind"] for g in me.ok("db", "generations", *where, "--json").json()["generations"]]
    assert kinds[0] == "final" and "pre_restore" in kinds
    assert me.ok("db", "operation", op["id"], *where, "--json").json()["terminalCode"] == "ok"
    me.fails("not_abortable", "db", "operation", op["id"], "--abort", *where)


@components.PSQL
def test_proxy_reaches_the_database_with_the_login_session_and_no_password(me: Cli) -> None:
    import json
    import signal

    from tests.cli.conftest import SVC

    slug, owner = uniq("dbp"), uniq("owner")
    me.login(owner)
    me.ok("orgs", "create", slug)
    me.ok("projects", "create", "web", "--org", slug)
    where = ("--project", "web", "--org", slug)
    me.fails("not_found", "db", "proxy", *where)  # no database yet: said at once
    creds = me.ok("db", "create", *where, "--json").json()

    proxy = subprocess.Popen([SVC, "db", "proxy", *where, "--json"], env=me.env(), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert proxy.stdout is not None
        info = json.loads(proxy.stdout.readline())
        assert info["host"] == "127.0.0.1" and info["database"] == creds["database"]
        env = {"PGHOST": "127.0.0.1", "PGPORT": str(info["port"]), "PGDATABASE": "anything", "PGUSER": "anyone",
               "PGPASSWORD": "not-the-password", "PGSSLMODE": "prefer", "PATH": "/usr/bin:/bin"}
        done = subprocess.run(["psql", "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c",
                               "create table t (x int); insert into t values (1), (2); "
                               "select current_user || ' ' || current_database() || ' ' || sum(x) from t"],
                              env=env, capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip().splitlines()[-1] == f"{creds['user']} {creds['database']} 3"
        # A second connection at the same time: each its own tunnel.
        again = subprocess.run(["psql", "-X", "-A", "-t", "-c", "select count(*) from t"], env=env,
                               capture_output=True, text=True, timeout=60, check=False)
        assert again.returncode == 0 and again.stdout.strip() == "2", again.stderr
    finally:
        proxy.send_signal(signal.SIGINT)
        proxy.wait(timeout=30)

    # The tunnel opens with a login session only (spec 5.7), not an access token; a viewer gets none.
    import httpx
    from websockets.sync.client import connect

    session = httpx.post(f"{me.api_url}/v1/auth/dev/login", json={"subject": owner}, timeout=10).json()["token"]
    made = httpx.post(f"{me.api_url}/v1/me/tokens", json={"name": "ci"}, timeout=10,
                      headers={"authorization": f"Bearer {session}"})
    assert made.status_code == 201, made.text
    url = me.api_url.replace("http://", "ws://") + f"/v1/orgs/{slug}/projects/web/database/proxy"
    with connect(url, additional_headers={"Authorization": f"Bearer {made.json()['token']}"}) as ws:
        assert json.loads(ws.recv(timeout=30))["code"] == "session_required"
    with connect(url) as ws:
        assert json.loads(ws.recv(timeout=30))["code"] == "unauthorized"


def test_backup_now_takes_a_generation_and_proves_it(me: Cli) -> None:
    slug = uniq("dbb")
    me.login(uniq("owner"))
    me.ok("orgs", "create", slug)
    me.ok("projects", "create", "web", "--org", slug)
    where = ("--project", "web", "--org", slug)
    me.fails("not_found", "db", "backup", *where)  # no database yet
    me.ok("db", "create", *where)

    done = me.ok("db", "backup", "--poll-seconds", "0.1", *where)
    said = done.out.strip()
    assert said.startswith("Generation 1.") and "of web's database taken (" in said, said
    assert said.endswith(" s.") and "verified: restored in" in said, said
    seq = int(said.split()[1].split(".")[1])
    gens = me.ok("db", "generations", *where, "--json").json()["generations"]
    mine = next(g for g in gens if g["seq"] == seq)
    assert (mine["kind"], mine["verified"]) == ("manual", True)
    assert "manual" in me.ok("db", "generations", *where).out

    op = me.ok("db", "backup", "--poll-seconds", "0.1", *where, "--json").json()
    assert (op["kind"], op["phase"], op["terminalCode"]) == ("backup", "done", "ok")
    assert op["generation"]["seq"] > seq
    started = me.ok("db", "backup", "--no-wait", *where, "--json").json()
    assert set(started) == {"operationId"}
    # Another while it runs is refused with the server's code (or it finished first: then it starts).
    again = me("db", "backup", "--no-wait", *where)
    assert again.code == 0 or again.error_code() == "operation_in_progress", again.err
    # Bad input: refused by the CLI before a request.
    bad = me("db", "backup", "--poll-seconds", "0", *where)
    assert bad.code == 2 and "--poll-seconds" in bad.err
