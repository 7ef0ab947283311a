"""What a push may store, with the real git CLI against svc on a real port: one push is bounded by
SVC_REPO_MAX_PUSH_BYTES (git's receive.maxInputSize), an org's repositories together by its plan's
repository storage (deleted ones until purged); each refused in words the pusher reads, and a push
under both goes in."""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy import select, update

from svc.domains.repos import jobs
from svc.domains.repos.settings import RepoSettings
from svc.jobs.registry import JobRun
from svc.models import Org, Plan, Repo
from svc.settings import Settings
from svc.uow import Tx, unit_of_work
from tests.repos.conftest import Git, new_token, project_with_repo, serving, with_token

KIB = 1024


async def commit_random(git: Git, work: Path, name: str, size: int) -> None:
    """A file of `size` random bytes (git cannot compress it smaller) committed in `work`."""
    (work / name).write_bytes(os.urandom(size))
    await git("add", name, cwd=work)
    await git("commit", "-qm", f"{name}: {size} bytes", cwd=work)


async def refs_of(git: Git, url: str) -> str:
    return (await git("ls-remote", url)).out


async def test_a_push_over_the_size_bound_is_refused_in_words(settings: Settings, git: Git, tmp_path: Path) -> None:
    async with serving(settings.model_copy(update={"repo_max_push_bytes": 200 * KIB})) as served:
        alice = await served.svc.login("alice")
        url = with_token((await project_with_repo(alice))["cloneUrl"], await new_token(alice))
        work = tmp_path / "work"
        await git("init", "-q", "-b", "main", str(work))
        await commit_random(git, work, "big.bin", 300 * KIB)
        refused = await git("push", url, "main", cwd=work, ok=False)
        assert refused.code != 0
        assert "pack exceeds maximum allowed size" in refused.said, refused.said
        assert await refs_of(git, url) == ""  # nothing of it was taken

        # Under the bound: in.
        await git("reset", "-q", "--hard", "HEAD", cwd=work)
        small = tmp_path / "small"
        await git("init", "-q", "-b", "main", str(small))
        await commit_random(git, small, "small.bin", 100 * KIB)
        await git("push", url, "main", cwd=small)
        assert "refs/heads/main" in await refs_of(git, url)


async def test_the_orgs_repository_storage_is_refused_in_words(settings: Settings, git: Git, tmp_path: Path) -> None:
    quota = 600 * KIB
    bounded = settings.model_copy(update={"free_repo_storage_bytes": quota})
    async with serving(bounded, area_settings=[RepoSettings(repo_retention_days=0)]) as served:
        svc = served.svc
        alice = await svc.login("alice")
        org = alice.personal_org
        token = await new_token(alice)
        first = with_token((await project_with_repo(alice, project="web", repo="one"))["cloneUrl"], token)
        second = with_token((await project_with_repo(alice, project="api", repo="two"))["cloneUrl"], token)

        # 300 KiB in one repository: under the quota.
        one = tmp_path / "one"
        await git("init", "-q", "-b", "main", str(one))
        await commit_random(git, one, "a.bin", 300 * KIB)
        await git("push", first, "main", cwd=one)

        # 400 KiB more in another project's repository: the org's total would pass 600 KiB.
        two = tmp_path / "two"
        await git("init", "-q", "-b", "main", str(two))
        await commit_random(git, two, "b.bin", 400 * KIB)
        refused = await git("push", second, "main", cwd=two, ok=False)
        assert refused.code != 0
        assert "svc: this push was refused" in refused.said, refused.said
        assert "over the free plan's repository storage of 600.0 KB" in refused.said, refused.said
        assert "pre-receive hook declined" in refused.said
        assert await refs_of(git, second) == ""

        # Deleting the first repository frees nothing until it is purged.
        r = await alice.client.delete(f"/v1/orgs/{org}/projects/web/repos/one")
        assert r.status_code == 204, r.text
        again = await git("push", second, "main", cwd=two, ok=False)
        assert again.code != 0 and "deleted repositories count until they are purged" in again.said, again.said
        async with unit_of_work(svc.ctx, Tx.READ_THEN_WRITE) as uow:
            await jobs.purge_cycle(JobRun(ctx=svc.ctx, job_id="test", kind="repos.purge_cycle", payload={},
                                          attempt=1, max_attempts=1, uow=uow))
        async with svc.ctx.db.transaction(write=False) as s:
            assert list(await s.scalars(select(Repo.name))) == ["two"]
        await git("push", second, "main", cwd=two)  # purged: under the quota now
        assert "refs/heads/main" in await refs_of(git, second)

        # Past the free plan's storage again, a push that brings nothing (deleting a branch) still goes in.
        await git("push", second, "main:extra", cwd=two)
        await commit_random(git, two, "c.bin", 300 * KIB)
        refused = await git("push", second, "main", cwd=two, ok=False)
        assert refused.code != 0 and "over the free plan's repository storage" in refused.said, refused.said
        await git("push", second, ":extra", cwd=two)

        # The pro plan's storage (25 GiB by default) takes it.
        async with svc.ctx.db.transaction(write=True) as s:
            await s.execute(update(Org).where(Org.slug == org).values(plan=Plan.pro.value))
        await git("push", second, "main", cwd=two)


def test_the_defaults_are_the_plans() -> None:
    """One push 512 MiB; an org's repositories 1 GiB on the free plan, 25 GiB on pro."""
    fields = Settings.model_fields
    assert fields["repo_max_push_bytes"].default == 512 * 1024**2
    assert (fields["free_repo_storage_bytes"].default, fields["pro_repo_storage_bytes"].default) == (
        1024**3, 25 * 1024**3)
