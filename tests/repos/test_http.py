"""Git over HTTPS with the real git CLI against svc on a real port: clone, push, fetch, who may do
which, tokens revoked or limited, a force-push recovered from the ref history, a 20 MB push, a
rename during a push, and the wire details (protocol v2, gzip and chunked request bodies)."""

from __future__ import annotations

import asyncio
import gzip
import os
from pathlib import Path

import httpx
from sqlalchemy import select

from svc.models import Repo
from tests.access.helpers import add_member
from tests.repos.conftest import Git, Served, new_token, project_with_repo, with_token

ZERO = "0" * 40


async def test_clone_push_fetch_and_the_ref_history(served: Served, git: Git, tmp_path: Path) -> None:
    alice = await served.svc.login("alice", email="alice@example.com")
    repo = await project_with_repo(alice)
    url = with_token(repo["cloneUrl"], await new_token(alice))
    # An empty repository clones (made on this first access).
    empty = await git("clone", url, str(tmp_path / "empty"))
    assert "empty repository" in empty.said
    work = await git.site(tmp_path / "work")
    first = await git.head(work)
    await git("push", url, "main", cwd=work)
    (work / "README.md").write_text("# hello\n")
    await git("add", ".", cwd=work)
    await git("commit", "-qm", "readme", cwd=work)
    second = await git.head(work)
    await git("push", url, "main", cwd=work)

    await git("fetch", "-q", url, "main", cwd=tmp_path / "empty")
    assert (await git("rev-parse", "FETCH_HEAD", cwd=tmp_path / "empty")).out.strip() == second
    # Protocol v2 (git's default) answers ls-refs.
    listed = await git("-c", "protocol.version=2", "ls-remote", url, env={"GIT_TRACE_PACKET": "1"})
    assert f"{second}\trefs/heads/main" in listed.out and "version 2" in listed.err

    base = f"/v1/orgs/{alice.personal_org}/projects/web/repos/site"
    updates = (await alice.client.get(base + "/ref-updates")).json()["updates"]
    assert [(u["ref"], u["old"], u["new"], u["pusher"], u["transport"]) for u in updates] == [
        ("refs/heads/main", first, second, "alice@example.com", "http"),
        ("refs/heads/main", ZERO, first, "alice@example.com", "http")]


async def test_a_force_push_is_recovered_from_the_ref_history(served: Served, git: Git, tmp_path: Path) -> None:
    alice = await served.svc.login("alice")
    repo = await project_with_repo(alice)
    url = with_token(repo["cloneUrl"], await new_token(alice))
    work = await git.site(tmp_path / "work")
    await git("push", url, "main", cwd=work)
    (work / "precious.txt").write_text("do not lose me\n")
    await git("add", ".", cwd=work)
    await git("commit", "-qm", "precious work", cwd=work)
    precious = await git.head(work)
    await git("push", url, "main", cwd=work)
    # Somebody rewrites main and force-pushes: the precious commit is on no branch any more.
    await git("reset", "-q", "--hard", "HEAD~1", cwd=work)
    (work / "other.txt").write_text("other\n")
    await git("add", ".", cwd=work)
    await git("commit", "-qm", "other work", cwd=work)
    await git("push", "--force", url, "main", cwd=work)

    updates = (await alice.client.get(f"/v1/orgs/{alice.personal_org}/projects/web/repos/site/ref-updates")).json()
    lost = updates["updates"][0]["old"]
    assert lost == precious
    # Fetched back by its id into a fresh clone, and the branch restored from it.
    await git("clone", "-q", url, str(tmp_path / "rescue"))
    rescue = tmp_path / "rescue"
    await git("fetch", "-q", "origin", lost, cwd=rescue)
    assert (await git("cat-file", "-p", f"{lost}:precious.txt", cwd=rescue)).out == "do not lose me\n"
    await git("push", "--force", "origin", f"{lost}:refs/heads/main", cwd=rescue)
    await git("clone", "-q", url, str(tmp_path / "after"))
    assert (tmp_path / "after" / "precious.txt").read_text() == "do not lose me\n"


async def test_who_may_clone_and_push(served: Served, git: Git, tmp_path: Path) -> None:
    svc = served.svc
    alice = await svc.login("alice")
    bob, carol, dave = await svc.login("bob"), await svc.login("carol"), await svc.login("dave")
    assert (await alice.client.post("/v1/orgs", json={"slug": "team", "name": "Team"})).status_code == 201
    await add_member(alice, "team", bob, "member")
    await add_member(alice, "team", carol, "viewer")
    assert (await alice.client.post("/v1/orgs/team/projects", json={"name": "web"})).status_code == 201
    r = await alice.client.post("/v1/orgs/team/projects/web/repos", json={"name": "site"})
    plain = r.json()["cloneUrl"]
    work = await git.site(tmp_path / "work")
    await git("push", with_token(plain, await new_token(bob)), "main", cwd=work)  # a member pushes

    # A viewer clones but cannot push.
    viewer = with_token(plain, await new_token(carol))
    await git("clone", "-q", viewer, str(tmp_path / "carol"))
    refused = await git("push", viewer, "main:other", cwd=work, ok=False)
    assert refused.code != 0 and "member role" in refused.said
    # Someone outside the org learns nothing, with or without credentials.
    outsider = await git("clone", with_token(plain, await new_token(dave)), str(tmp_path / "dave"), ok=False)
    assert outsider.code != 0 and "not found" in outsider.said.lower()
    anonymous = await git("clone", plain, str(tmp_path / "anon"), ok=False)
    assert anonymous.code != 0 and "could not read Username" in anonymous.said  # git asks for credentials
    bad = await git("clone", with_token(plain, "svc_pat_not-a-token"), str(tmp_path / "bad"), ok=False)
    assert bad.code != 0

    # Public: anyone clones, nobody pushes without a member's credential.
    assert (await alice.client.patch("/v1/orgs/team/projects/web/repos/site",
                                     json={"visibility": "public"})).status_code == 204
    await git("clone", "-q", plain, str(tmp_path / "anon2"))
    await git("clone", "-q", with_token(plain, await new_token(dave)), str(tmp_path / "dave2"))
    assert (await git("push", plain, "main:other", cwd=work, ok=False)).code != 0


async def test_revoked_and_limited_tokens(served: Served, git: Git, tmp_path: Path) -> None:
    alice = await served.svc.login("alice")
    org = alice.personal_org
    repo = await project_with_repo(alice)
    await project_with_repo(alice, project="api", repo="code")
    work = await git.site(tmp_path / "work")
    r = await alice.client.post("/v1/me/tokens", json={"name": "soon revoked"})
    token, token_id = r.json()["token"], r.json()["id"]
    await git("push", with_token(repo["cloneUrl"], token), "main", cwd=work)
    assert (await alice.client.delete(f"/v1/me/tokens/{token_id}")).status_code == 204
    revoked = await git("fetch", with_token(repo["cloneUrl"], token), cwd=work, ok=False)
    assert revoked.code != 0 and "revoked" in revoked.said

    reader = with_token(repo["cloneUrl"], await new_token(alice, readOnly=True))
    await git("clone", "-q", reader, str(tmp_path / "reader"))
    pushed = await git("push", reader, "main:other", cwd=work, ok=False)
    assert pushed.code != 0 and "read-only" in pushed.said

    limited = await new_token(alice, project={"org": org, "name": "web"})
    await git("push", with_token(repo["cloneUrl"], limited), "main:limited", cwd=work)
    other = f"{served.url}/git/{org}/api/code.git"
    elsewhere = await git("clone", with_token(other, limited), str(tmp_path / "elsewhere"), ok=False)
    assert elsewhere.code != 0 and "limited to another project" in elsewhere.said


async def test_a_20_mb_push_and_a_rename_while_it_runs(served: Served, git: Git, tmp_path: Path) -> None:
    svc = served.svc
    alice = await svc.login("alice")
    repo = await project_with_repo(alice)
    url = with_token(repo["cloneUrl"], await new_token(alice))
    work = await git.site(tmp_path / "work")
    (work / "big.bin").write_bytes(os.urandom(20 * 1024 * 1024))  # incompressible: 20 MB on the wire
    await git("add", ".", cwd=work)
    await git("commit", "-qm", "big", cwd=work)
    node = svc.ctx.adapters.git
    assert node is not None
    gate = node.gate  # type: ignore[attr-defined]
    push = asyncio.create_task(git("push", url, "main", cwd=work))
    for _ in range(6000):  # the push is under way (its id is open) within a minute
        if gate._pushes or push.done():
            break
        await asyncio.sleep(0.01)
    assert (await alice.client.patch(f"/v1/orgs/{alice.personal_org}/projects/web/repos/site",
                                     json={"name": "renamed"})).status_code == 204
    await push  # the rename did not interrupt it
    renamed = url.replace("/site.git", "/renamed.git")
    await git("clone", "-q", renamed, str(tmp_path / "copy"))
    assert (tmp_path / "copy" / "big.bin").stat().st_size == 20 * 1024 * 1024
    async with svc.ctx.db.transaction(write=False) as s:
        assert (await s.scalars(select(Repo.name))).one() == "renamed"
    # The old URL still reaches it over git (as GitHub redirects), until a repository takes the name.
    await git("fetch", "-q", url, cwd=tmp_path / "copy")
    assert (await alice.client.post(f"/v1/orgs/{alice.personal_org}/projects/web/repos",
                                    json={"name": "site"})).status_code == 201
    await git("clone", "-q", url, str(tmp_path / "new"))
    assert not (tmp_path / "new" / "big.bin").exists()


def pkt(line: str) -> bytes:
    data = line.encode()
    return f"{len(data) + 4:04x}".encode() + data


async def test_gzip_and_chunked_request_bodies(served: Served, git: Git, tmp_path: Path) -> None:
    alice = await served.svc.login("alice")
    repo = await project_with_repo(alice)
    token = await new_token(alice)
    work = await git.site(tmp_path / "work")
    await git("push", with_token(repo["cloneUrl"], token), "main", cwd=work)
    head = await git.head(work)
    # A protocol v2 ls-refs request, gzipped, sent chunked (a generator body has no length).
    request = pkt("command=ls-refs\n") + b"0001" + pkt("peel\n") + b"0000"
    packed = gzip.compress(request)

    async def chunks() -> object:
        for i in range(0, len(packed), 7):
            yield packed[i:i + 7]

    async with httpx.AsyncClient(auth=("x", token), timeout=30) as client:
        r = await client.post(repo["cloneUrl"] + "/git-upload-pack", content=chunks(),  # type: ignore[arg-type]
                              headers={"Content-Type": "application/x-git-upload-pack-request",
                                       "Content-Encoding": "gzip", "Git-Protocol": "version=2"})
    assert r.status_code == 200, r.text
    assert f"{head} refs/heads/main".encode() in r.content


async def test_a_login_session_never_reaches_git_and_a_token_does(served: Served, git: Git, tmp_path: Path) -> None:
    """Spec, Authentication 5: git takes personal access tokens (or SSH keys), never the dashboard's
    session, though the session is valid for the API."""
    alice = await served.svc.login("alice")
    repo = await project_with_repo(alice, visibility="private")
    work = await git.site(tmp_path / "work")
    assert (await alice.client.get("/v1/me")).status_code == 200  # the session itself is good
    for verb in (["clone", with_token(repo["cloneUrl"], alice.token), str(tmp_path / "clone")],
                 ["push", with_token(repo["cloneUrl"], alice.token), "main"]):
        refused = await git(*verb, cwd=work, ok=False)
        assert refused.code != 0 and "never a login session" in refused.said, refused.said
    # The same over plain HTTP: 401, the session token in the password or the username.
    info = repo["cloneUrl"] + "/info/refs?service=git-upload-pack"
    async with httpx.AsyncClient() as http:
        for auth in (("anyone", alice.token), (alice.token, "")):
            r = await http.get(info, auth=auth)
            assert r.status_code == 401 and "personal access token" in r.text
    await git("push", with_token(repo["cloneUrl"], await new_token(alice)), "main", cwd=work)


async def test_the_ref_history_lists_the_most_recent_200(served: Served, git: Git, tmp_path: Path) -> None:
    """Spec "Limits": the ref-update history is the most recent 200 (a push of 205 tags records 205)."""
    alice = await served.svc.login("alice")
    repo = await project_with_repo(alice)
    url = with_token(repo["cloneUrl"], await new_token(alice))
    work = await git.site(tmp_path / "work")
    await git("push", url, "main", cwd=work)
    head = await git.head(work)
    for i in range(205):  # as `git tag` writes them, without 205 processes
        (work / ".git" / "refs" / "tags" / f"v{i:03d}").write_text(head + "\n")
    await git("push", "-q", url, "--tags", cwd=work)

    r = await alice.client.get(f"/v1/orgs/{alice.personal_org}/projects/web/repos/site/ref-updates")
    listed = [u["ref"] for u in r.json()["updates"]]
    assert len(listed) == 200
    assert set(listed) == {f"refs/tags/v{i:03d}" for i in range(5, 205)}  # the oldest six are left out
    assert "refs/heads/main" not in listed
