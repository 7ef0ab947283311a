"""`svc projects`, `svc deploy`, `svc deployments`, `svc rollback`, `svc secrets`, `svc access` against a
real `svc serve`, and the packing rules of `svc deploy` (svc.cli.bundle)."""

from __future__ import annotations

import fcntl
import io
import json
import os
import pty
import re
import select
import subprocess
import tarfile
import termios
import time
from pathlib import Path

import httpx
import pytest

from svc.cli import bundle
from svc.cli.client import CliError
from svc.cli.commands.secrets import read_stdin
from tests.cli.conftest import SVC, Cli, People, uniq
from tests.support.wait import WAIT_SECONDS

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "site"


def _signed_in(cli: Cli, prefix: str) -> str:
    """Signs in a new user; returns their personal org (its slug is the subject)."""
    subject = uniq(prefix)
    cli.login(subject)
    return subject


def _edge_get(url: str, path: str) -> httpx.Response:
    """GET through the edge: the project's URL names the host, the edge listens on 127.0.0.1."""
    parsed = httpx.URL(url)
    return httpx.get(f"http://127.0.0.1:{parsed.port}{path}", headers={"host": parsed.netloc.decode()}, timeout=10)


# ---------------------------------------------------------------------------------------------- projects


def test_projects_create_list_show_delete(cli: Cli) -> None:
    org = _signed_in(cli, "proj")
    created = cli.ok("projects", "create", "web", "--json").json()
    assert created["name"] == "web" and created["org"] == org
    assert created["hostname"] == f"web-{org}.localhost"
    assert created["url"].startswith(f"http://web-{org}.localhost:")
    r = cli.ok("projects", "create", "api")
    assert "Created project api" in r.out and f"http://api-{org}.localhost:" in r.out

    listed = cli.ok("projects", "list", "--json").json()
    assert [p["name"] for p in listed["projects"]] == ["api", "web"]
    text = cli.ok("projects", "list").out
    assert "web" in text and created["url"] in text

    shown = cli.ok("projects", "show", "web", "--json").json()
    assert shown["name"] == "web" and shown["liveDeployment"] is None and shown["accessMode"] == "public"
    assert shown["hostnames"] == [created["hostname"]]
    text = cli.ok("projects", "show", "web").out
    assert "no deployment yet" in text and created["url"] in text and "public" in text
    cli.fails("project_name_taken", "projects", "create", "web")
    cli.fails("bad_request", "projects", "create", "Bad_Name")
    cli.fails("not_found", "projects", "show", "nope")

    # Delete asks for the name; a wrong answer or none deletes nothing.
    r = cli.fails("confirm_mismatch", "projects", "delete", "web", input="api\n")
    assert "web" in r.err
    cli.fails("aborted", "projects", "delete", "web", input="")
    assert len(cli.ok("projects", "list", "--json").json()["projects"]) == 2

    # --json: the final operation, followed until its phase is done.
    r = cli.ok("projects", "delete", "web", "--json", input="web\n")
    op = r.json()
    assert op["phase"] == "done" and op["terminalCode"] == "ok" and op["kind"] == "teardown"
    assert op["projectId"] == created["id"] and op["finishedAt"]
    assert "Deleting web" in r.err  # the spinner line is on stderr, never in the JSON
    r = cli.ok("projects", "delete", "api", "--yes")
    assert f"Deleted project api of {org}." in r.out
    assert cli.ok("projects", "list", "--json").json() == {"projects": []}
    assert f"No projects in {org}" in cli.ok("projects", "list").out
    cli.fails("not_found", "projects", "delete", "web", "--yes")


def test_projects_delete_without_waiting(cli: Cli) -> None:
    _signed_in(cli, "nowait")
    cli.ok("projects", "create", "quick")
    started = cli.ok("projects", "delete", "quick", "--yes", "--no-wait", "--json").json()
    assert set(started) == {"operationId"} and started["operationId"]


def test_the_org_comes_from_the_option_the_environment_or_svc_json(cli: Cli, tmp_path: Path) -> None:
    personal = _signed_in(cli, "orgpick")
    team = uniq("team")
    cli.ok("orgs", "create", team)
    assert cli.ok("projects", "create", "one", "--org", team, "--json").json()["org"] == team
    assert cli.ok("projects", "create", "two", "--json", env=cli.env(SVC_ORG=team)).json()["org"] == team
    assert [p["name"] for p in cli.ok("projects", "list", "--org", team, "--json").json()["projects"]] == ["one", "two"]
    assert cli.ok("projects", "list", "--json").json() == {"projects": []}  # the personal org
    (tmp_path / "svc.json").write_text(json.dumps({"org": team, "project": "one"}))
    listed = cli.ok("projects", "list", "--json", cwd=tmp_path).json()
    assert [x["name"] for x in listed["projects"]] == ["one", "two"]
    assert cli.ok("projects", "list", "--org", personal, "--json", cwd=tmp_path).json() == {"projects": []}
    cli.fails("not_found", "projects", "list", "--org", uniq("nobody"))


def test_commands_need_sign_in(cli: Cli) -> None:
    cli.fails("not_signed_in", "projects", "list")
    cli.fails("not_signed_in", "deploy", str(EXAMPLE))


# ------------------------------------------------------------------------------------------------ deploy


def test_deploy_the_example_site_then_redeploy_list_and_roll_back(cli: Cli) -> None:
    org = _signed_in(cli, "site")
    # The one deploy from end to end in a real `svc` process (the other commands run in-process).
    first = cli.process("deploy", str(EXAMPLE), "--json")
    assert first.code == 0, first.err
    dep = first.json()
    assert dep["version"] == 1 and dep["live"] is True and dep["digest"].startswith("sha256:")
    assert dep["url"].startswith(f"http://hello-{org}.localhost:")  # "project": "hello" in svc.json
    assert "Created project hello" in first.err and "Uploading" in first.err
    url = dep["url"]

    page = _edge_get(url, "/")
    assert page.status_code == 200 and "Hello from svc" in page.text
    assert _edge_get(url, "/about/").text == (EXAMPLE / "assets" / "about" / "index.html").read_text()
    assert _edge_get(url, "/img/pattern.png").content == (EXAMPLE / "assets" / "img" / "pattern.png").read_bytes()

    second = cli.ok("deploy", str(EXAMPLE))
    # The address as people open it (with the slash the README shows); the count in words.
    assert "Deployed version 2 of hello" in second.out and f"Live at {url}/\n" in second.out
    assert "Packed 1 files" not in second.err

    listed = cli.ok("deployments", "--project", "hello", "--json").json()["deployments"]
    assert [(d["version"], d["live"]) for d in listed] == [(2, True), (1, False)]
    assert listed[0]["digest"] == listed[1]["digest"] == dep["digest"]  # the same tree packs to the same bytes
    assert {d["uploader"] for d in listed} == {org}
    table = cli.ok("deployments", "--project", "hello").out
    assert "VERSION" in table and "live" in table and dep["digest"][:19] in table

    back = cli.ok("rollback", "1", "--project", "hello", "--json").json()
    assert back["version"] == 1 and back["live"] is True and back["url"] == url
    listed = cli.ok("deployments", "--project", "hello", "--json").json()["deployments"]
    assert [(d["version"], d["live"]) for d in listed] == [(2, False), (1, True)]
    assert cli.ok("projects", "show", "hello", "--json").json()["liveDeployment"]["version"] == 1
    assert f"Version 2 of hello ({dep['digest'][:19]}) is live at {url}/." in cli.ok(
        "rollback", "2", "--project", "hello").out
    cli.fails("not_found", "rollback", "9", "--project", "hello")
    r = cli("rollback", "0", "--project", "hello")
    assert r.code == 2  # a usage error: versions count from 1


def test_deploy_says_which_command_grants_what_svc_json_asks_for(cli: Cli, tmp_path: Path) -> None:
    """examples/chat asks for "ai": true; deployed to a project without AI, the deploy says the
    command that grants it (the org named: not the personal one), storage and auth alike; what is
    granted is not mentioned."""
    _signed_in(cli, "asks")
    org = uniq("asks")
    cli.ok("orgs", "create", org)
    chat = cli.ok("deploy", str(EXAMPLE.parent / "chat"), "--org", org)
    assert (f'svc.json asks for "ai": true (env.ai), which chat does not have yet: `svc ai grant --project chat '
            f'--org {org}` grants it.') in chat.out, chat.out
    cli.ok("ai", "grant", "--project", "chat", "--org", org)
    assert "asks for" not in cli.ok("deploy", str(EXAMPLE.parent / "chat"), "--org", org).out
    folder = tmp_path / "files"
    (folder / "assets").mkdir(parents=True)
    (folder / "assets" / "index.html").write_text("<p>files</p>")
    (folder / "svc.json").write_text(json.dumps({"project": "files", "storage": True, "auth": True}))
    said = cli.ok("deploy", str(folder), "--json").json()["notGranted"]
    assert said == [{"resource": "storage", "binding": "env.storage", "command": "svc storage grant --project files"},
                    {"resource": "auth", "binding": None, "command": "svc auth grant --project files"}]
    out = cli.ok("deploy", str(folder)).out
    assert ('svc.json asks for "storage": true (env.storage), which files does not have yet: '
            '`svc storage grant --project files` grants it.') in out
    assert 'svc.json asks for "auth": true, which files does not have yet: `svc auth grant --project files`' in out
    assert "asks for" not in cli.ok("deploy", str(EXAMPLE)).out  # svc.json asks for nothing


def test_deploy_refuses_a_folder_without_a_project_or_a_usable_svc_json(cli: Cli, tmp_path: Path) -> None:
    _signed_in(cli, "nomanifest")
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<h1>hi</h1>")
    r = cli.fails("no_project", "deploy", str(site))  # no svc.json, no --project: which project?
    assert f"{site} has no svc.json" in r.err and f"`svc deploy {site} --project NAME`" in r.err
    cli.fails("not_a_directory", "deploy", str(site / "index.html"), "--project", "web")
    cli.fails("not_a_directory", "deploy", str(tmp_path / "missing"), "--project", "web")
    for text in ("{", "[]", '"web"', '{"project": 5}', '{"project": ""}'):
        (site / "svc.json").write_text(text)
        cli.fails("bad_manifest", "deploy", str(site), "--project", "web")
    (site / "svc.json").write_text("{}")
    r = cli.fails("no_project", "deploy", str(site))
    assert "--project" in r.err
    assert cli.ok("projects", "list", "--json").json() == {"projects": []}  # nothing was created


def test_deploy_a_plain_folder_as_the_site(cli: Cli, tmp_path: Path) -> None:
    _signed_in(cli, "plain")
    site = tmp_path / "plain"
    (site / "docs").mkdir(parents=True)
    (site / "svc.json").write_text('{"project": "plain"}')
    (site / "index.html").write_text("<h1>plain</h1>")
    (site / "docs" / "index.html").write_text("<h1>docs</h1>")
    (site / ".env").write_text("SECRET=1")
    (site / ".well-known").mkdir()
    (site / ".well-known" / "security.txt").write_text("Contact: mailto:sec@example.com")
    (site / "node_modules").mkdir()
    (site / "node_modules" / "x.js").write_text("x")
    outside = tmp_path / "outside.txt"
    outside.write_text("private")
    (site / "leak.txt").symlink_to(outside)
    dep = cli.ok("deploy", str(site), "--json").json()
    assert dep["version"] == 1
    assert "skipped leak.txt (a link to outside the folder)" in cli.ok("deploy", str(site)).err
    url = dep["url"]
    assert _edge_get(url, "/").text == "<h1>plain</h1>"
    assert _edge_get(url, "/docs/").text == "<h1>docs</h1>"
    assert _edge_get(url, "/.well-known/security.txt").status_code == 200
    for gone in ("/.env", "/node_modules/x.js", "/leak.txt", "/svc.json", "/assets/index.html"):
        assert _edge_get(url, gone).status_code == 404, gone


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "T",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_SYSTEM": "/dev/null"}
    return subprocess.run(["git", "-C", str(repo), *args], env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def test_deploy_sends_git_provenance_from_the_working_tree(cli: Cli, tmp_path: Path) -> None:
    _signed_in(cli, "git")
    repo = tmp_path / "repo"
    site = repo / "web"
    (site / "assets").mkdir(parents=True)
    (site / "svc.json").write_text('{"project": "gitsite"}')
    (site / "assets" / "index.html").write_text("v1")
    _git(repo, "init", "-q", "-b", "feature/ünïcode")
    _git(repo, "add", ".")
    message = "Ship 100% of the «site» & more: " + "x" * 300
    _git(repo, "commit", "-q", "-m", f"{message}\n\nbody text is not sent")
    head = _git(repo, "rev-parse", "HEAD")

    first = cli.ok("deploy", str(site))
    # A folder inside a repository: whose commit is recorded is said (and --no-git leaves it out).
    assert f"Recording the commit {head[:7]} of the git repository at {repo}" in first.err
    (site / "assets" / "index.html").write_text("v2, not committed")
    r = cli.ok("deploy", str(site))
    assert f"from {head[:7]} on feature/ünïcode with uncommitted changes" in r.out
    cli.ok("deploy", str(site), "--no-git")

    rows = cli.ok("deployments", "--project", "gitsite", "--json").json()["deployments"]
    git = {d["version"]: d["git"] for d in rows}
    assert git[1] == {"commit": head, "message": message[:200], "branch": "feature/ünïcode", "dirty": False}
    assert git[2] == {**git[1], "dirty": True}
    assert git[3] == {"commit": None, "message": None, "branch": None, "dirty": None}
    table = cli.ok("deployments", "--project", "gitsite").out
    assert f"{head[:7]} (dirty)" in table and "feature/ünïcode" in table


def test_git_info_outside_a_repository_and_without_commits(tmp_path: Path) -> None:
    assert bundle.git_info(tmp_path) is None
    _git(tmp_path, "init", "-q")
    assert bundle.git_info(tmp_path) is None  # no commit yet
    (tmp_path / "a").write_text("a")
    _git(tmp_path, "add", "a")
    _git(tmp_path, "commit", "-q", "-m", "first")
    _git(tmp_path, "checkout", "-q", "--detach")
    info = bundle.git_info(tmp_path)
    assert info is not None and info.branch is None and info.dirty is False and info.message == "first"
    assert set(info.headers()) == {"X-Svc-Git-Commit", "X-Svc-Git-Message", "X-Svc-Git-Dirty"}


# ------------------------------------------------------------------------------------------------ packing


def _pack(directory: Path) -> tuple[bytes, dict[str, tarfile.TarInfo], dict[str, bytes], bundle.Packed]:
    out = io.BytesIO()
    packed = bundle.pack(directory, out)
    data = out.getvalue()
    infos: dict[str, tarfile.TarInfo] = {}
    files: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            assert member.name not in infos, f"duplicate {member.name}"
            infos[member.name] = member
            if member.isfile():
                f = tar.extractfile(member)
                assert f is not None
                files[member.name] = f.read()
    return data, infos, files, packed


def test_pack_assets_and_worker_as_they_are(tmp_path: Path) -> None:
    (tmp_path / "assets" / "css").mkdir(parents=True)
    (tmp_path / "worker").mkdir()
    (tmp_path / "svc.json").write_text('{"db": true}')
    (tmp_path / "assets" / "index.html").write_text("home")
    (tmp_path / "assets" / "css" / "site.css").write_text("body{}")
    (tmp_path / "assets" / ".DS_Store").write_text("junk")
    (tmp_path / "worker" / "index.js").write_text("export default {}")
    (tmp_path / "worker" / "run.sh").write_text("#!/bin/sh")
    (tmp_path / "worker" / "run.sh").chmod(0o755)
    (tmp_path / "README.md").write_text("not part of the bundle")
    (tmp_path / "assets" / "alias.html").symlink_to(tmp_path / "assets" / "index.html")
    (tmp_path / "assets" / "dirlink").symlink_to(tmp_path / "assets" / "css")
    os.mkfifo(tmp_path / "assets" / "pipe")
    data, infos, files, packed = _pack(tmp_path)
    assert next(iter(infos)) == "svc.json"
    assert files == {"svc.json": b'{"db": true}', "assets/alias.html": b"home", "assets/css/site.css": b"body{}",
                     "assets/index.html": b"home", "worker/index.js": b"export default {}",
                     "worker/run.sh": b"#!/bin/sh"}
    assert {n for n, i in infos.items() if i.isdir()} == {"assets", "assets/css", "worker"}
    assert all(i.isfile() or i.isdir() for i in infos.values())  # links are packed as files, never as links
    assert infos["worker/run.sh"].mode == 0o755 and infos["assets/index.html"].mode == 0o644
    assert all(i.uid == 0 and i.uname == "" for i in infos.values())
    assert packed.layout == "assets" and packed.files == 6
    assert packed.skipped == ["assets/dirlink (a link to something that is not a file)",
                              "assets/pipe (not a regular file)"]
    assert _pack(tmp_path)[0] == data  # deterministic: the same tree gives the same bytes


def test_pack_a_plain_folder_under_assets_with_the_skip_rules(tmp_path: Path) -> None:
    for rel, text in (("svc.json", "{}"), ("index.html", "i"), ("blog/post/index.html", "p"), (".env", "x"),
                      (".git/config", "x"), ("node_modules/pkg/index.js", "x"), (".svc/state", "x"),
                      (".well-known/security.txt", "s"), (".well-known/.hidden", "x"), ("blog/.draft.html", "x"),
                      ("blog/node_modules/x", "x")):
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    _, _, files, packed = _pack(tmp_path)
    assert files == {"svc.json": b"{}", "assets/index.html": b"i", "assets/blog/post/index.html": b"p",
                     "assets/.well-known/security.txt": b"s"}
    assert packed.layout == "folder"


def test_read_manifest_errors(tmp_path: Path) -> None:
    with pytest.raises(CliError) as exc:
        bundle.read_manifest(tmp_path)
    assert exc.value.code == "no_manifest"
    (tmp_path / "svc.json").write_bytes(b"\xff\xfe")
    with pytest.raises(CliError) as exc:
        bundle.read_manifest(tmp_path)
    assert exc.value.code == "bad_manifest"


# ----------------------------------------------------------------------------------------------- secrets


VALUE = "s3cr3t-Value-for-the-cli-81d2"


def test_secrets_set_list_delete_never_print_the_value(cli: Cli) -> None:
    org = _signed_in(cli, "secrets")
    cli.ok("projects", "create", "web")
    r = cli.ok("secrets", "set", "API_KEY", "--project", "web", input=VALUE + "\n")
    assert "Set secret API_KEY of web (version 1)." in r.out
    meta = cli.ok("secrets", "set", "API_KEY", "--project", "web", "--json", input=VALUE).json()
    assert set(meta) == {"name", "version", "updatedAt"} and meta["version"] == 2
    cli.ok("secrets", "set", "OTHER", "--json", input=VALUE, env=cli.env(SVC_PROJECT="web"))

    listed = cli.ok("secrets", "list", "--project", "web", "--json").json()["secrets"]
    assert [(s["name"], s["version"]) for s in listed] == [("API_KEY", 2), ("OTHER", 1)]
    text = cli.ok("secrets", "list", "--project", "web")
    assert "API_KEY" in text.out and "OTHER" in text.out

    # Names are checked before any value is read; the API's codes.
    cli.fails("bad_request", "secrets", "set", "api_key", "--project", "web", input=VALUE)
    cli.fails("reserved_name", "secrets", "set", "SVC_TOKEN", "--project", "web", input=VALUE)
    cli.fails("no_value", "secrets", "set", "EMPTY", "--project", "web", input="")
    cli.fails("no_value", "secrets", "set", "EMPTY", "--project", "web", input="\n")
    cli.fails("value_too_large", "secrets", "set", "BIG", "--project", "web", input="a" * 65_537)
    cli.fails("not_found", "secrets", "list", "--project", "nope")
    cli.fails("no_project", "secrets", "list")

    deleted = cli.ok("secrets", "delete", "OTHER", "--project", "web", "--json").json()
    assert deleted == {"deleted": True, "org": org, "project": "web", "name": "OTHER"}
    assert "Deleted secret API_KEY of web." in cli.ok("secrets", "delete", "API_KEY", "--project", "web").out
    cli.fails("not_found", "secrets", "delete", "API_KEY", "--project", "web")
    assert cli.ok("secrets", "list", "--project", "web", "--json").json() == {"secrets": []}


def test_secrets_use_svc_json_in_the_current_folder_and_roles(cli: Cli, people: People, tmp_path: Path) -> None:
    _signed_in(cli, "sjson")
    team = uniq("crew")
    cli.ok("orgs", "create", team)
    cli.ok("projects", "create", "app", "--org", team)
    (tmp_path / "svc.json").write_text(json.dumps({"org": team, "project": "app"}))
    r = cli.ok("secrets", "set", "TOKEN", "--json", input=VALUE, cwd=tmp_path)
    assert r.json()["version"] == 1
    assert VALUE not in r.out and VALUE not in r.err
    assert [s["name"] for s in cli.ok("secrets", "list", "--json", cwd=tmp_path).json()["secrets"]] == ["TOKEN"]

    viewer = people("viewer")
    subject = _signed_in(viewer, "look")
    cli.ok("members", "add", team, subject, "--role", "viewer")
    viewer.fails("forbidden", "secrets", "list", "--org", team, "--project", "app")
    viewer.fails("forbidden", "secrets", "set", "TOKEN", "--org", team, "--project", "app", input="x")


def _on_a_terminal(cli: Cli, args: list[str], answers: list[tuple[str, str]]) -> tuple[int, str]:
    """Run `svc` with a pseudo-terminal as its controlling terminal (stdin, stdout, stderr and /dev/tty);
    type each answer once its prompt shows. Returns the exit status and everything the terminal showed."""
    master, slave = pty.openpty()

    def take_terminal() -> None:
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen([SVC, *args], stdin=slave, stdout=slave, stderr=slave, env=cli.env(),
                            start_new_session=True, preexec_fn=take_terminal)
    os.close(slave)
    shown = b""
    pending = list(answers)
    deadline = time.monotonic() + WAIT_SECONDS
    try:
        while time.monotonic() < deadline:
            if pending and pending[0][0].encode() in shown:
                prompt, answer = pending.pop(0)
                shown = shown.replace(prompt.encode(), b"<" + prompt.encode() + b">", 1)
                os.write(master, answer.encode() + b"\n")
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    data = os.read(master, 4096)
                except OSError:  # EIO: the other side is closed
                    break
                if not data:
                    break
                shown += data
        return proc.wait(timeout=30), re.sub(r"\x1b\[[0-9;]*m", "", shown.decode(errors="replace"))
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_secrets_set_asks_on_the_terminal_without_echo(cli: Cli) -> None:
    _signed_in(cli, "tty")
    cli.ok("projects", "create", "web")
    code, shown = _on_a_terminal(cli, ["secrets", "set", "TOKEN", "--project", "web"],
                                 [("Value for TOKEN: ", VALUE), ("Value for TOKEN again: ", VALUE)])
    assert code == 0, shown
    assert "Set secret TOKEN of web (version 1)." in shown and VALUE not in shown
    code, shown = _on_a_terminal(cli, ["secrets", "set", "TOKEN", "--project", "web"],
                                 [("Value for TOKEN: ", VALUE), ("Value for TOKEN again: ", VALUE + "x")])
    assert code == 1 and "(mismatch)" in shown and VALUE not in shown
    code, shown = _on_a_terminal(cli, ["access", "set", "password", "--project", "web"],
                                 [("New password (empty: keep the current one): ", VALUE),
                                  ("New password again: ", VALUE)])
    assert code == 0 and "Access to web: password" in shown and VALUE not in shown
    assert [s["version"] for s in cli.ok("secrets", "list", "--project", "web", "--json").json()["secrets"]] == [1]


def test_read_stdin_drops_one_trailing_newline(monkeypatch: pytest.MonkeyPatch) -> None:
    def read(raw: bytes) -> str:
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(raw)))
        return read_stdin("value")

    assert read(b"abc\n") == "abc"
    assert read(b"abc\r\n") == "abc"
    assert read(b"abc\n\n") == "abc\n"
    assert read(b"-----BEGIN KEY-----\nxyz\n-----END KEY-----\n") == "-----BEGIN KEY-----\nxyz\n-----END KEY-----"
    assert read("é".encode() * 32_768 + b"\n") == "é" * 32_768
    for raw, code in ((b"", "no_value"), (b"\xff", "bad_value"), (b"a" * 65_537, "value_too_large"),
                      (b"a" * 10_000_000, "value_too_large")):
        with pytest.raises(CliError) as exc:
            read(raw)
        assert exc.value.code == code


# ------------------------------------------------------------------------------------------------ access


def test_access_modes_and_the_bypass_secret(cli: Cli) -> None:
    _signed_in(cli, "access")
    cli.ok("projects", "create", "web")
    assert cli.ok("access", "show", "--project", "web", "--json").json()["mode"] == "public"
    assert "public" in cli.ok("access", "show", "--project", "web").out

    password = "correct horse battery staple"
    # The first password is set, not changed (there was no old one to have entered).
    r = cli.ok("access", "set", "password", "--password-stdin", "--project", "web", input="first one\n")
    assert "The password was set; people must enter it" in r.out and "changed" not in r.out, r.out
    r = cli.ok("access", "set", "password", "--password-stdin", "--project", "web", input=password + "\n")
    assert "The password was changed; people who entered the old one must enter the new one." in r.out, r.out
    r = cli.ok("access", "set", "password", "--password-stdin", "--project", "web", "--json", input=password + "\n")
    assert r.json()["mode"] == "password" and password not in r.out and password not in r.err
    assert "password" not in r.json()
    r = cli.ok("access", "set", "password", "--project", "web")  # no password given: the stored one stays
    assert "Access to web: password" in r.out
    r = cli.ok("access", "show", "--project", "web")
    assert "password" in r.out and password not in r.out
    cli.fails("no_value", "access", "set", "password", "--password-stdin", "--project", "web", input="")
    assert cli("access", "set", "org", "--password-stdin", "--project", "web", input="x").code == 2
    assert cli("access", "set", "private", "--project", "web").code == 2

    new = cli.ok("access", "bypass", "new", "--project", "web", "--json").json()
    assert isinstance(new["secret"], str) and len(new["secret"]) >= 20
    r = cli.ok("access", "bypass", "new", "--project", "web")
    shown = [line.strip() for line in r.out.splitlines() if len(line.strip()) >= 20 and " " not in line.strip()]
    assert len(shown) == 1 and shown[0] != new["secret"]  # a new secret, printed once
    assert r.out.count(shown[0]) == 1 and "not shown again" in r.out
    assert shown[0] not in cli.ok("access", "show", "--project", "web", "--json").out
    revoked = cli.ok("access", "bypass", "revoke", "--project", "web", "--json").json()
    assert revoked["revoked"] is True and revoked["project"] == "web"
    assert "Revoked the bypass secret of web." in cli.ok("access", "bypass", "revoke", "--project", "web").out

    assert cli.ok("access", "set", "org", "--project", "web", "--json").json()["mode"] == "org"
    assert cli.ok("access", "set", "public", "--project", "web", "--json").json()["mode"] == "public"
