"""`svc repos ...` and `svc git-credential` against a real `svc serve`, with the real git CLI: after
`svc login` and `svc git-credential install`, git clones and pushes with no token pasted."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.cli.conftest import Cli, People, uniq


def git(cli: Cli, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The git CLI as this person runs it (their HOME: their git settings and svc's credentials)."""
    env = cli.env(GIT_TERMINAL_PROMPT="0", GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="Ada",
                  GIT_AUTHOR_EMAIL="ada@example.com", GIT_COMMITTER_NAME="Ada", GIT_COMMITTER_EMAIL="ada@example.com")
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False)


def test_repos_create_list_rename_delete(people: People) -> None:
    alice = people("alice")
    alice.login(uniq("alice"))
    org = uniq("git")
    alice.ok("orgs", "create", org, "--name", "Git Co")
    alice.ok("projects", "create", "web", "--org", org)
    made = alice.ok("repos", "create", "site", "--project", "web", "--org", org, "--json").json()
    assert made["cloneUrl"] == f"{alice.api_url}/git/{org}/web/site.git" and made["visibility"] == "private"
    said = alice.ok("repos", "create", "docs", "--visibility", "public", "--default-branch", "trunk",
                    "--project", "web", "--org", org)
    assert "git push svc trunk" in said.out
    listed = alice.ok("repos", "list", "--project", "web", "--org", org, "--json").json()["repos"]
    assert [(r["name"], r["visibility"], r["defaultBranch"]) for r in listed] == [
        ("docs", "public", "trunk"), ("site", "private", "main")]
    assert "site" in alice.ok("repos", "list", "--project", "web", "--org", org).out
    alice.fails("repo_exists", "repos", "create", "site", "--project", "web", "--org", org)
    alice.fails("bad_request", "repos", "create", "bad name", "--project", "web", "--org", org)
    alice.fails("bad_request", "repos", "update", "site", "--visibility", "secret", "--project", "web", "--org", org)

    renamed = alice.ok("repos", "rename", "site", "www", "--project", "web", "--org", org, "--json").json()
    assert renamed["name"] == "www" and renamed["cloneUrl"].endswith("/www.git")
    url = alice.ok("repos", "clone-url", "www", "--project", "web", "--org", org).out.strip()
    assert url == renamed["cloneUrl"]
    alice.fails("ssh_unavailable", "repos", "clone-url", "www", "--ssh", "--project", "web", "--org", org)
    updated = alice.ok("repos", "update", "www", "--visibility", "public", "--project", "web", "--org", org,
                       "--json").json()
    assert updated["visibility"] == "public"
    alice.fails("not_confirmed", "repos", "delete", "www", "--project", "web", "--org", org, input="nope\n")
    alice.ok("repos", "delete", "www", "--project", "web", "--org", org, input="www\n")
    alice.fails("not_found", "repos", "show", "www", "--project", "web", "--org", org)


def test_git_clones_and_pushes_with_the_credential_helper(people: People, tmp_path: Path) -> None:
    alice = people("alice")
    alice.login(uniq("alice"))
    org = uniq("git")
    alice.ok("orgs", "create", org, "--name", "Git Co")
    alice.ok("projects", "create", "web", "--org", org)
    url = alice.ok("repos", "create", "site", "--project", "web", "--org", org, "--json").json()["cloneUrl"]
    # Without the helper git has no credential (and may not prompt).
    assert git(alice, "clone", url, str(tmp_path / "refused")).returncode != 0

    alice.ok("git-credential", "install")
    assert "git-credential" in (alice.home / ".gitconfig").read_text()
    cloned = git(alice, "clone", url, str(tmp_path / "site"))
    assert cloned.returncode == 0, cloned.stderr
    work = tmp_path / "site"
    (work / "svc.json").write_text('{"name": "web"}')
    (work / "assets").mkdir()
    (work / "assets" / "index.html").write_text("<h1>pushed</h1>")
    assert git(alice, "add", ".", cwd=work).returncode == 0
    assert git(alice, "commit", "-qm", "first", cwd=work).returncode == 0
    pushed = git(alice, "push", "origin", "main", cwd=work)
    assert pushed.returncode == 0, pushed.stderr
    assert "as version 1" in pushed.stderr

    # One token was made for git, named for this machine, and shows in the list.
    tokens = alice.ok("tokens", "list", "--json").json()["tokens"]
    assert [t["name"].startswith("git on ") for t in tokens] == [True]
    history = alice.ok("repos", "history", "site", "--project", "web", "--org", org, "--json").json()["updates"]
    assert [(u["ref"], u["deployment"]["version"]) for u in history] == [("refs/heads/main", 1)]
    assert "v1" in alice.ok("repos", "history", "site", "--project", "web", "--org", org).out

    # Revoked: git is refused, the helper forgets the token, and the next try makes a new one.
    alice.ok("tokens", "revoke", tokens[0]["id"])
    assert git(alice, "fetch", cwd=work).returncode != 0
    again = git(alice, "fetch", cwd=work)
    assert again.returncode == 0, again.stderr
    assert len(alice.ok("tokens", "list", "--json").json()["tokens"]) == 2
