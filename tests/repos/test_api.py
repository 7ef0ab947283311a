"""Repositories through the API, on both stores: create (a row only), list, get, rename, visibility,
default branch, soft delete and the purge after the retention period, roles, bad input refused with
nothing changed, audit, and what a project's teardown and an org's deletion do with them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from svc.domains.repos import jobs
from svc.jobs.registry import JobRun
from svc.models import AuditEvent, Repo
from svc.settings import Settings
from svc.uow import Tx, unit_of_work
from tests.access.helpers import add_member
from tests.repos.conftest import Git, Served, new_token, project_with_repo, with_token
from tests.support.api import Svc, assert_error, running_svc, wait_operation
from tests.support.config import configured

R = "/v1/orgs/{org}/projects/{project}/repos"


def repos_url(org: str, project: str = "web") -> str:
    return R.format(org=org, project=project)


async def audit_actions(svc: Svc, org_slug: str) -> list[tuple[str, dict[str, Any]]]:
    async with svc.ctx.db.transaction(write=False) as s:
        rows = (await s.scalars(select(AuditEvent).where(AuditEvent.org_slug == org_slug,
                                                         AuditEvent.action.like("repo.%"))
                                .order_by(AuditEvent.at))).all()
    return [(r.action, r.data) for r in rows]


async def test_create_list_get_rename_delete(svc: Svc) -> None:
    alice = await svc.login("alice")
    org = alice.personal_org
    created = await project_with_repo(alice, visibility="public", defaultBranch="trunk")
    assert created["name"] == "site" and created["visibility"] == "public" and created["defaultBranch"] == "trunk"
    assert created["cloneUrl"] == f"http://svc.test/git/{org}/web/site.git"
    assert created["sshUrl"] is None  # this svc runs no SSH server
    # A row only: no disk copy until the first git access.
    node = svc.ctx.adapters.git
    assert node is not None
    async with svc.ctx.db.transaction(write=False) as s:
        repo_id = (await s.scalars(select(Repo.id))).one()
    assert not node.repo_dir(repo_id).exists()  # type: ignore[attr-defined]

    listed = (await alice.client.get(repos_url(org))).json()
    assert [r["name"] for r in listed["repos"]] == ["site"]
    assert (await alice.client.get(repos_url(org) + "/site")).json() == created

    assert (await alice.client.patch(repos_url(org) + "/site", json={"name": "www", "visibility": "private",
                                                                     "defaultBranch": "main"})).status_code == 204
    assert_error(await alice.client.get(repos_url(org) + "/site"), 404, "not_found")
    renamed = (await alice.client.get(repos_url(org) + "/www")).json()
    assert renamed["cloneUrl"].endswith("/www.git") and renamed["visibility"] == "private"
    assert renamed["defaultBranch"] == "main"

    assert (await alice.client.delete(repos_url(org) + "/www")).status_code == 204
    assert_error(await alice.client.get(repos_url(org) + "/www"), 404)
    assert (await alice.client.get(repos_url(org))).json() == {"repos": []}
    assert_error(await alice.client.delete(repos_url(org) + "/www"), 404)
    # The name is free again once deleted.
    again = await alice.client.post(repos_url(org), json={"name": "www"})
    assert again.status_code == 201, again.text

    actions = await audit_actions(svc, org)
    assert [a for a, _ in actions] == ["repo.create", "repo.update", "repo.delete", "repo.create"]
    assert actions[1][1]["changed"] == {"name": "www", "visibility": "private", "defaultBranch": "main"}


async def test_names_are_unique_in_a_project(svc: Svc) -> None:
    alice = await svc.login("alice")
    org = alice.personal_org
    await project_with_repo(alice)
    assert (await alice.client.post(repos_url(org), json={"name": "other"})).status_code == 201
    assert_error(await alice.client.post(repos_url(org), json={"name": "site"}), 409, "repo_exists")
    assert_error(await alice.client.patch(repos_url(org) + "/other", json={"name": "site"}), 409, "repo_exists")
    # Another project may use the name.
    assert (await alice.client.post(f"/v1/orgs/{org}/projects", json={"name": "api"})).status_code == 201
    assert (await alice.client.post(repos_url(org, "api"), json={"name": "site"})).status_code == 201


async def test_bad_input_is_refused_and_changes_nothing(svc: Svc) -> None:
    alice = await svc.login("alice")
    org = alice.personal_org
    await project_with_repo(alice)
    for body in ({"name": ""}, {"name": "a b"}, {"name": ".hidden"}, {"name": "x.git"}, {"name": "x" * 101},
                 {"name": "ok", "visibility": "secret"}, {"name": "ok", "defaultBranch": "a..b"},
                 {"name": "ok", "defaultBranch": "-x"}, {"name": "ok", "defaultBranch": "x.lock"},
                 {"name": "ok", "extra": 1}, {"name": 5}):
        error = assert_error(await alice.client.post(repos_url(org), json=body), 400)
        assert error["message"], body
    said = assert_error(await alice.client.post(repos_url(org), json={"name": "x.git"}), 400)
    assert ".git" in said["message"]
    assert_error(await alice.client.patch(repos_url(org) + "/site", json={}), 400)
    assert_error(await alice.client.patch(repos_url(org) + "/site", json={"defaultBranch": "has space"}), 400)
    assert [r["name"] for r in (await alice.client.get(repos_url(org))).json()["repos"]] == ["site"]
    site = (await alice.client.get(repos_url(org) + "/site")).json()
    assert site["defaultBranch"] == "main"
    assert len(await audit_actions(svc, org)) == 1


async def test_roles(svc: Svc) -> None:
    alice, bob, carol = await svc.login("alice"), await svc.login("bob"), await svc.login("carol")
    assert (await alice.client.post("/v1/orgs", json={"slug": "team", "name": "Team"})).status_code == 201
    await add_member(alice, "team", bob, "member")
    await add_member(alice, "team", carol, "viewer")
    assert (await alice.client.post("/v1/orgs/team/projects", json={"name": "web"})).status_code == 201
    # Viewers read, members create, admins rename and delete.
    assert_error(await carol.client.post(repos_url("team"), json={"name": "site"}), 403)
    assert (await bob.client.post(repos_url("team"), json={"name": "site"})).status_code == 201
    assert (await carol.client.get(repos_url("team") + "/site")).status_code == 200
    assert (await carol.client.get(repos_url("team"))).status_code == 200
    assert_error(await bob.client.patch(repos_url("team") + "/site", json={"name": "x"}), 403)
    assert_error(await bob.client.delete(repos_url("team") + "/site"), 403)
    # Outsiders learn nothing.
    dave = await svc.login("dave")
    assert_error(await dave.client.get(repos_url("team")), 404)
    assert (await alice.client.delete(repos_url("team") + "/site")).status_code == 204


async def test_an_org_with_repositories_cannot_be_deleted_until_its_projects_go(svc: Svc) -> None:
    alice = await svc.login("alice")
    assert (await alice.client.post("/v1/orgs", json={"slug": "team", "name": "Team"})).status_code == 201
    assert (await alice.client.post("/v1/orgs/team/projects", json={"name": "web"})).status_code == 201
    assert (await alice.client.post(repos_url("team"), json={"name": "site"})).status_code == 201
    refused = assert_error(await alice.client.request("DELETE", "/v1/orgs/team", json={"confirm": "team"}), 409,
                           "org_not_empty")
    assert refused["details"]["holdings"]["repositories"]["count"] == 1


async def test_deleted_repositories_are_purged_after_the_retention(settings: Settings, tmp_path: Path,
                                                                   git: Git) -> None:
    async with running_svc(configured(settings, repo_retention_days=0)) as svc:
        alice = await svc.login("alice")
        org = alice.personal_org
        await project_with_repo(alice)
        node = svc.ctx.adapters.git
        assert node is not None
        async with svc.ctx.db.transaction(write=False) as s:
            repo_id = (await s.scalars(select(Repo.id))).one()
        await node.ensure(repo_id, "main")
        disk = node.repo_dir(repo_id)  # type: ignore[attr-defined]
        assert (disk / "HEAD").exists()
        assert (await alice.client.delete(repos_url(org) + "/site")).status_code == 204
        assert disk.exists()  # kept for the retention period (0 days here: the next cycle)
        async with unit_of_work(svc.ctx, Tx.READ_THEN_WRITE) as uow:
            await jobs.purge_cycle(JobRun(ctx=svc.ctx, job_id="test", kind="repos.purge_cycle", payload={},
                                          attempt=1, max_attempts=1, uow=uow))
        assert not disk.exists()
        async with svc.ctx.db.transaction(write=False) as s:
            assert await s.scalar(select(func.count()).select_from(Repo)) == 0


async def test_a_project_teardown_removes_its_repositories(served: Served, git: Git, tmp_path: Path) -> None:
    svc = served.svc
    alice = await svc.login("alice")
    org = alice.personal_org
    repo = await project_with_repo(alice)
    token = await new_token(alice)
    work = await git.site(tmp_path / "work")
    await git("push", with_token(repo["cloneUrl"], token), "main", cwd=work)
    node = svc.ctx.adapters.git
    assert node is not None
    async with svc.ctx.db.transaction(write=False) as s:
        repo_id = (await s.scalars(select(Repo.id))).one()
    disk = node.repo_dir(repo_id)  # type: ignore[attr-defined]
    assert (disk / "HEAD").exists()
    op = (await alice.client.request("DELETE", f"/v1/orgs/{org}/projects/web", json={"confirm": "web"})).json()
    done = await wait_operation(alice, org, op["operationId"])
    assert done["terminalCode"] == "ok", done
    assert not disk.exists()
    async with svc.ctx.db.transaction(write=False) as s:
        assert await s.scalar(select(func.count()).select_from(Repo)) == 0
