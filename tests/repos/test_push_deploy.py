"""Deploy on push: a push to the default branch whose tree has svc.json at its root is deployed, and
the pusher reads the version and its address (or why not) in the push's own output."""

from __future__ import annotations

from pathlib import Path

from tests.repos.conftest import Git, Served, new_token, project_with_repo, with_token


async def test_a_push_to_the_default_branch_deploys(served: Served, git: Git, tmp_path: Path) -> None:
    alice = await served.svc.login("alice")
    org = alice.personal_org
    repo = await project_with_repo(alice)
    url = with_token(repo["cloneUrl"], await new_token(alice))
    work = await git.site(tmp_path / "work", page="<h1>from git</h1>")
    commit = await git.head(work)
    pushed = await git("push", url, "main", cwd=work)
    assert f"remote: svc: deployed {commit[:7]} to {org}/web as version 1" in pushed.err
    assert f"remote: svc: live at http://web-{org}.localhost" in pushed.err

    deployments = (await alice.client.get(f"/v1/orgs/{org}/projects/web/deployments")).json()["deployments"]
    assert len(deployments) == 1
    made = deployments[0]
    assert made["version"] == 1 and made["live"]
    assert made["git"] == {"commit": commit, "message": "the site", "branch": "main", "dirty": False}
    updates = (await alice.client.get(f"/v1/orgs/{org}/projects/web/repos/site/ref-updates")).json()["updates"]
    assert updates[0]["deployment"] == {"id": made["id"], "version": 1}


async def test_what_is_not_deployed_says_why(served: Served, git: Git, tmp_path: Path) -> None:
    alice = await served.svc.login("alice")
    org = alice.personal_org
    repo = await project_with_repo(alice)
    url = with_token(repo["cloneUrl"], await new_token(alice))

    # Another branch: kept, not deployed.
    feature = await git.site(tmp_path / "feature", branch="feature")
    said = await git("push", url, "feature", cwd=feature)
    assert "'feature' is not the default branch (main): nothing deployed" in said.err

    # A bad svc.json: the push is kept, the deployment refused with the bundle's own reason.
    bad = await git.site(tmp_path / "bad", manifest="{not json")
    refused = await git("push", url, "main", cwd=bad)
    assert "was not deployed:" in refused.err and "svc.json" in refused.err

    # No svc.json at the root: nothing to deploy.
    plain = tmp_path / "plain"
    await git("init", "-q", "-b", "main", str(plain))
    (plain / "notes.txt").write_text("just notes\n")
    await git("add", ".", cwd=plain)
    await git("commit", "-qm", "notes", cwd=plain)
    quiet = await git("push", "--force", url, "main", cwd=plain)
    assert "no svc.json at the root of main: nothing to deploy" in quiet.err

    assert (await alice.client.get(f"/v1/orgs/{org}/projects/web/deployments")).json()["deployments"] == []
    refs = (await alice.client.get(f"/v1/orgs/{org}/projects/web/repos/site/refs")).json()["refs"]
    assert {r["name"] for r in refs} == {"refs/heads/main", "refs/heads/feature"}
