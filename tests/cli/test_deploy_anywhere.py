"""`svc deploy` from any folder: with --project a folder needs no svc.json (the bundle gets `{}`, the
folder is left as it was); the bound on a bundle's size is checked before anything is uploaded; the
upload carries its Content-Length; `svc deployments` fits the terminal."""

from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path

from svc.cli import bundle
from tests.cli.conftest import Cli, uniq
from tests.cli.fake_http import FakeHttp
from tests.cli.test_projects_deploy import _edge_get, _git, _signed_in


def _site(root: Path) -> Path:
    (root / "about").mkdir(parents=True)
    (root / "index.html").write_text("<h1>no manifest</h1>")
    (root / "about" / "index.html").write_text("<h1>about</h1>")
    return root


# ---------------------------------------------------------------------------------- no svc.json needed


def test_deploy_a_folder_without_svc_json_from_anywhere(cli: Cli, tmp_path: Path) -> None:
    _signed_in(cli, "bare")
    site = _site(tmp_path / "my site")
    before = sorted(p.name for p in site.rglob("*"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "svc.json").write_text('{"project": "not-this-one", "org": "not-this-org"}')

    p = cli.ok("deploy", "../my site", "--project", "bare", "--json", cwd=elsewhere)
    dep = p.json()
    assert dep["version"] == 1 and dep["url"].startswith("http://bare-")
    assert "has no svc.json: the bundle gets an empty one ({})" in p.err
    assert sorted(p.name for p in site.rglob("*")) == before  # nothing was written into the folder
    assert _edge_get(dep["url"], "/").text == "<h1>no manifest</h1>"
    assert _edge_get(dep["url"], "/about/").text == "<h1>about</h1>"
    assert _edge_get(dep["url"], "/svc.json").status_code == 404

    # From inside the folder, DIR defaults to it; the same tree packs to the same bundle.
    again = cli.ok("deploy", "-p", "bare", "--json", cwd=site).json()
    assert again["version"] == 2 and again["digest"] == dep["digest"]

    # --org goes with it, still without any svc.json.
    team = uniq("bareteam")
    cli.ok("orgs", "create", team)
    cli.ok("deploy", str(site), "--project", "web", "--org", team, "--json", cwd=elsewhere)
    assert [x["name"] for x in cli.ok("projects", "list", "--org", team, "--json").json()["projects"]] == ["web"]


def test_without_project_or_svc_json_deploy_says_what_it_needs(cli: Cli, tmp_path: Path) -> None:
    _signed_in(cli, "which")
    site = _site(tmp_path / "site")
    p = cli("deploy", cwd=site)
    assert p.code == 1 and p.out == ""
    assert p.err.startswith("error: Which project? This folder has no svc.json to name it, and no --project "
                         "was given (no_project)\nhint: run `svc deploy --project NAME`")
    assert 'add svc.json with {"project": "NAME"}' in p.err
    assert cli.ok("projects", "list", "--json").json() == {"projects": []}


def test_pack_gives_a_folder_without_svc_json_the_manifest_it_is_handed(tmp_path: Path) -> None:
    site = _site(tmp_path / "site")
    out = io.BytesIO()
    packed = bundle.pack(site, out, {})
    assert packed.manifest_added and packed.layout == "folder"
    with tarfile.open(fileobj=io.BytesIO(out.getvalue()), mode="r:gz") as tar:
        names = tar.getnames()
        member = tar.extractfile("svc.json")
        assert member is not None and member.read() == b"{}"
    assert names[0] == "svc.json" and "assets/index.html" in names and "assets/svc.json" not in names
    again = io.BytesIO()
    bundle.pack(site, again, {})
    assert again.getvalue() == out.getvalue()
    assert not (site / "svc.json").exists()


# ------------------------------------------------------------------------------------- the size bound


def test_an_oversize_bundle_is_refused_before_the_upload(cli: Cli, tmp_path: Path) -> None:
    _signed_in(cli, "big")
    site = tmp_path / "big"
    (site / "assets").mkdir(parents=True)
    (site / "svc.json").write_text('{"project": "big"}')
    (site / "assets" / "index.html").write_text("<h1>big</h1>")
    (site / "assets" / "noise.bin").write_bytes(os.urandom(256 * 1024))  # does not compress
    size = bundle.pack(site, io.BytesIO()).size

    for args in (("deploy", str(site)), ("deploy", str(site), "--json")):
        r = cli.fails("bundle_too_large", *args, env=cli.env(SVC_MAX_BUNDLE_BYTES="100000"))
        assert "over the bound of 100,000 bytes (100.0 kB, SVC_MAX_BUNDLE_BYTES)" in r.err
        assert "nothing was uploaded" in r.err and "Uploading" not in r.err
    # One byte under the bundle's size: the whole bundle is packed, then refused with its size.
    r = cli.fails("bundle_too_large", "deploy", str(site), env=cli.env(SVC_MAX_BUNDLE_BYTES=str(size - 1)))
    assert f"over the bound of {size - 1:,} bytes" in r.err and "Uploading" not in r.err
    assert cli.ok("projects", "list", "--json").json() == {"projects": []}  # not even the project was made

    dep = cli.ok("deploy", str(site), "--json", env=cli.env(SVC_MAX_BUNDLE_BYTES=str(size))).json()
    assert dep["version"] == 1
    r = cli.fails("bad_setting", "deploy", str(site), env=cli.env(SVC_MAX_BUNDLE_BYTES="100MB"))
    assert "SVC_MAX_BUNDLE_BYTES must be a whole number of bytes" in r.err


def test_the_upload_sends_its_content_length_with_a_progress_bar(tmp_path: Path) -> None:
    site = _site(tmp_path / "site")
    size = bundle.pack(site, io.BytesIO(), {}).size
    project = (200, {"content-type": "application/json"}, b'{"name": "web", "url": "http://web-acme.example"}')
    created = (201, {"content-type": "application/json"},
               json.dumps({"version": 1, "digest": "sha256:" + "ab" * 32, "live": True}).encode())
    with FakeHttp(routes={("GET", "/v1/orgs/acme/projects/web"): project,
                          ("POST", "/v1/orgs/acme/projects/web/deployments"): created}) as api:
        cli = Cli(api.url, tmp_path / "me")
        r = cli.ok("deploy", str(site), "--project", "web", "--org", "acme", "--json",
                   env=cli.env(SVC_TOKEN="svc_pat_test"))
        upload = next(s for s in api.seen if s.method == "POST")
    assert r.json()["url"] == "http://web-acme.example" and "Uploading" in r.err
    assert upload.headers["content-length"] == str(size) == str(upload.body_bytes)
    assert "transfer-encoding" not in upload.headers
    assert upload.headers["content-type"] == "application/gzip"
    assert upload.headers["authorization"] == "Bearer svc_pat_test"


# --------------------------------------------------------------------------------- the deployments table


def test_the_deployments_table_fits_columns_with_long_messages_cut(cli: Cli, tmp_path: Path) -> None:
    _signed_in(cli, "narrow")
    repo = tmp_path / "repo"
    (repo / "assets").mkdir(parents=True)
    (repo / "svc.json").write_text('{"project": "narrow"}')
    (repo / "assets" / "index.html").write_text("v1")
    _git(repo, "init", "-q", "-b", "a-rather-long-branch-name-for-a-feature")
    _git(repo, "add", ".")
    message = ("Rework the landing page so that newcomers see the pricing table first " * 3).strip()
    _git(repo, "commit", "-q", "-m", message)
    cli.ok("deploy", str(repo))
    (repo / "assets" / "index.html").write_text("v2")
    cli.ok("deploy", str(repo))  # with uncommitted changes
    digests = [d["digest"][:19] for d in cli.ok("deployments", "--project", "narrow", "--json").json()["deployments"]]

    for columns in (80, 120, 200):
        out = cli.ok("deployments", "--project", "narrow", env=cli.env(COLUMNS=str(columns))).out
        lines = [ln for ln in out.splitlines() if ln.strip()]
        assert len(lines) == 4, out  # header, rule, one line per deployment
        assert all(len(ln) <= columns for ln in lines), out
        header, _, newest, oldest = lines
        assert header.split()[:3] == ["VERSION", "LIVE", "DIGEST"] and "MESSAGE" in header
        assert newest.split()[:3] == ["2", "live", digests[0]] and oldest.split()[:3] == ["1", "-", digests[1]]
        assert "Rework th" in newest and "…" in newest  # cut with an ellipsis, not wrapped
        assert message not in out
        # Narrower, the uploader and then the branch are left out (`--json` has everything).
        assert ("UPLOADER" in header, "BRANCH" in header) == {80: (False, False), 120: (False, True),
                                                              200: (True, True)}[columns]
    wide = cli.ok("deployments", "--project", "narrow", env=cli.env(COLUMNS="400")).out
    assert message[:200] in wide and "(dirty)" in wide  # the CLI sends 200 characters of it


def test_tables_keep_one_line_per_row_at_any_width() -> None:
    from rich.console import Console

    from svc.cli import output

    rows = [["usr_0194c1a2b3c4d5e6f7a8b9c0", f"Person {i} " + "with a very long display name " * 3,
             f"person{i}@a-rather-long-domain-name.example.com", "admin", "2026-01-02 03:04 UTC"] for i in range(3)]
    for width in (30, 60, 80, 120, 400):
        console = Console(file=io.StringIO(), width=width, highlight=False, soft_wrap=False)
        console.print(output.table(["USER ID", "NAME", "EMAIL", "ROLE", "JOINED"], rows,
                                   shrink={"NAME": 8, "EMAIL": 12}, optional=("JOINED",)))
        lines = console.file.getvalue().splitlines()  # type: ignore[attr-defined]
        assert len(lines) == 2 + len(rows), "\n".join(lines)
        assert all(len(line) <= width for line in lines), "\n".join(lines)
        if width >= 80:  # wide enough for the id: it is never cut
            assert all(row[0] in line for row, line in zip(rows, lines[2:], strict=True))
        if width >= 400:
            assert all(row[1].strip() in line and row[2] in line for row, line in zip(rows, lines[2:], strict=True))
