"""What a push may store, with the real git CLI against svc on a real port: one push is bounded by
SVC_REPO_MAX_PUSH_BYTES (git's receive.maxInputSize), an org's repositories together by its plan's
repository storage (deleted ones until purged); each refused in words the pusher reads, and a push
under both goes in."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select, update

from svc.adapters.git.local import LocalGitNode
from svc.adapters.git.port import ZERO_ID, Pusher, RefChange, Refused
from svc.adapters.git.settings import GitSettings
from svc.domains.orgs.settings import PlanSettings
from svc.domains.repos import gatekeeper, jobs
from svc.domains.repos.gatekeeper import Gatekeeper
from svc.jobs.registry import JobRun
from svc.models import Org, Plan, RefUpdate, Repo
from svc.settings import Settings
from svc.uow import Tx, unit_of_work
from tests.repos.conftest import Git, Served, new_token, project_with_repo, serving, with_token
from tests.support.api import Svc
from tests.support.config import configured

KIB = 1024


async def commit_random(git: Git, work: Path, name: str, size: int) -> None:
    """A file of `size` random bytes (git cannot compress it smaller) committed in `work`."""
    (work / name).write_bytes(os.urandom(size))
    await git("add", name, cwd=work)
    await git("commit", "-qm", f"{name}: {size} bytes", cwd=work)


async def refs_of(git: Git, url: str) -> str:
    return (await git("ls-remote", url)).out


async def test_a_push_over_the_size_bound_is_refused_in_words(settings: Settings, git: Git, tmp_path: Path) -> None:
    async with serving(configured(settings, repo_max_push_bytes=200 * KIB)) as served:
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
    bounded = configured(settings, free_repo_storage_bytes=quota)
    async with serving(configured(bounded, repo_retention_days=0)) as served:
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

        # 400 KiB more in another project's repository: more than is left of 600 KiB, which is all
        # this push may bring (git's receive.maxInputSize): git stops reading it.
        two = tmp_path / "two"
        await git("init", "-q", "-b", "main", str(two))
        await commit_random(git, two, "b.bin", 400 * KIB)
        refused = await git("push", second, "main", cwd=two, ok=False)
        assert refused.code != 0
        assert "pack exceeds maximum allowed size" in refused.said, refused.said
        assert await refs_of(git, second) == ""

        # Deleting the first repository frees nothing until it is purged.
        r = await alice.client.delete(f"/v1/orgs/{org}/projects/web/repos/one")
        assert r.status_code == 204, r.text
        again = await git("push", second, "main", cwd=two, ok=False)
        assert again.code != 0 and "pack exceeds maximum allowed size" in again.said, again.said
        async with unit_of_work(svc.ctx, Tx.READ_THEN_WRITE) as uow:
            await jobs.purge_cycle(JobRun(ctx=svc.ctx, job_id="test", kind="repos.purge_cycle", payload={},
                                          attempt=1, max_attempts=1, uow=uow))
        async with svc.ctx.db.transaction(write=False) as s:
            assert list(await s.scalars(select(Repo.name))) == ["two"]
        await git("push", second, "main", cwd=two)  # purged: under the quota now
        assert "refs/heads/main" in await refs_of(git, second)

        # On the pro plan 700 KiB more goes in; back on the free plan the org is over its 600 KiB, and
        # a push is refused in words before it sends a byte, even one that brings no objects (a new
        # branch at a commit already there), and one that only deletes a branch.
        async with svc.ctx.db.transaction(write=True) as s:
            await s.execute(update(Org).where(Org.slug == org).values(plan=Plan.pro.value))
        await git("push", second, "main:extra", cwd=two)
        await commit_random(git, two, "c.bin", 700 * KIB)
        await git("push", second, "main", cwd=two)
        async with svc.ctx.db.transaction(write=True) as s:
            await s.execute(update(Org).where(Org.slug == org).values(plan=Plan.free.value))
        for refspec in ("main~1:refs/heads/new", "main:refs/tags/v1", ":extra"):
            refused = await git("push", second, refspec, cwd=two, ok=False)
            assert refused.code != 0, refspec
            assert "leaves nothing of the free plan's repository storage of 600.0 KB" in refused.said, refused.said
            assert "(deleted repositories count until they are purged)" in refused.said
        refs = await refs_of(git, second)
        assert "refs/heads/extra" in refs and "refs/heads/new" not in refs and "refs/tags/v1" not in refs
        assert await _ref_updates(svc, "two") == 3  # main, extra, main: nothing of the refused


async def _ref_updates(svc: Svc, repo: str) -> int:
    async with svc.ctx.db.transaction(write=False) as s:
        return len(list(await s.scalars(select(RefUpdate.id).join(Repo, Repo.id == RefUpdate.repo_id)
                                        .where(Repo.name == repo))))


async def test_the_pre_receive_hook_exempts_only_deletions(settings: Settings, git: Git, tmp_path: Path) -> None:
    """The hook's own check (for pushes admitted before the org filled up, e.g. two at once): over
    the quota, a push that brings no objects but creates or moves a ref is refused too; one that
    only deletes refs goes in."""
    async with serving(configured(settings, free_repo_storage_bytes=200 * KIB)) as served:
        svc = served.svc
        alice = await svc.login("alice")
        url = with_token((await project_with_repo(alice))["cloneUrl"], await new_token(alice))
        async with svc.ctx.db.transaction(write=True) as s:
            await s.execute(update(Org).where(Org.slug == alice.personal_org).values(plan=Plan.pro.value))
        work = tmp_path / "work"
        await git("init", "-q", "-b", "main", str(work))
        await commit_random(git, work, "a.bin", 300 * KIB)
        await git("push", url, "main", "main:old", cwd=work)
        async with svc.ctx.db.transaction(write=True) as s:
            await s.execute(update(Org).where(Org.slug == alice.personal_org).values(plan=Plan.free.value))
            repo = (await s.scalars(select(Repo))).one()
        head = await git.head(work)
        keeper = Gatekeeper(svc.ctx)
        pusher = Pusher(repo_id=repo.id, user_id="user_x", name="Ada", transport="http")
        for change in (RefChange(ZERO_ID, head, "refs/heads/new"), RefChange(head, head, "refs/heads/main")):
            with pytest.raises(Refused, match=r"over the free plan's repository storage of 200\.0 KB"):
                await keeper.before_push(pusher, [change, RefChange(head, ZERO_ID, "refs/heads/old")], 0)
        assert (await keeper.before_push(pusher, [RefChange(head, ZERO_ID, "refs/heads/old")], 0)).lines == []


async def test_refs_are_bounded_per_push_and_per_repository(settings: Settings, git: Git, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gatekeeper, "MAX_REF_CHANGES", 5)
    monkeypatch.setattr(gatekeeper, "MAX_REFS", 8)
    async with serving(settings) as served:
        alice = await served.svc.login("alice")
        url = with_token((await project_with_repo(alice))["cloneUrl"], await new_token(alice))
        work = tmp_path / "work"
        await git("init", "-q", "-b", "main", str(work))
        await commit_random(git, work, "a.bin", KIB)

        six = [f"main:refs/heads/b{i}" for i in range(6)]
        refused = await git("push", url, *six, cwd=work, ok=False)
        assert refused.code != 0
        assert "it changes 6 refs, more than the 5 svc takes in one push; push them in parts" in refused.said
        assert await refs_of(git, url) == ""

        await git("push", url, "main", *[f"main:refs/heads/b{i}" for i in range(4)], cwd=work)  # 5 refs
        await git("push", url, *[f"main:refs/tags/t{i}" for i in range(3)], cwd=work)  # 8: the most
        refused = await git("push", url, "main:refs/heads/ninth", cwd=work, ok=False)
        assert refused.code != 0
        assert "it would leave the repository with 9 refs, more than the 8 a repository may hold" in refused.said
        # Any namespace counts; a push that deletes as many as it creates goes in.
        refused = await git("push", url, "main:refs/pull/1/head", cwd=work, ok=False)
        assert "with 9 refs" in refused.said, refused.said
        await git("push", url, ":refs/heads/b0", "main:refs/heads/ninth", cwd=work)
        assert len((await refs_of(git, url)).splitlines()) == 1 + 8  # HEAD, and the 8 refs


async def test_a_push_is_kept_as_a_pack_and_counted_in_blocks(served: Served, git: Git, tmp_path: Path) -> None:
    """A few small objects stay the pack they came in (no file, and no block, per object), and the
    org's disk is its allocated blocks, which a push of small files exceeds its bytes by far."""
    alice = await served.svc.login("alice")
    url = with_token((await project_with_repo(alice))["cloneUrl"], await new_token(alice))
    work = tmp_path / "work"
    await git("init", "-q", "-b", "main", str(work))
    for i in range(20):
        (work / f"f{i}.txt").write_text(f"{i}\n")
    await git("add", ".", cwd=work)
    await git("commit", "-qm", "twenty small files", cwd=work)
    await git("push", url, "main", cwd=work)

    node = served.svc.ctx.adapters.git
    assert isinstance(node, LocalGitNode)
    async with served.svc.ctx.db.transaction(write=False) as s:
        repo_id = (await s.scalars(select(Repo.id))).one()
    where = node.repo_dir(repo_id)
    objects = [p.relative_to(where / "objects") for p in (where / "objects").rglob("*") if p.is_file()]
    assert objects and all(p.parts[0] == "pack" for p in objects), objects
    everything = list(where.rglob("*"))
    blocks = sum(p.lstat().st_blocks * 512 for p in everything)
    assert await node.disk_bytes([repo_id]) == blocks
    assert blocks > 2 * sum(p.lstat().st_size for p in everything if p.is_file())


async def until(check: Callable[[], bool], what: str) -> None:
    async with asyncio.timeout(90):
        while not check():
            await asyncio.sleep(0.02)
    assert check(), what


async def test_pushes_in_flight_are_bounded_per_org(settings: Settings, git: Git, tmp_path: Path) -> None:
    """Two pushes of an org at once (their packs still coming); a third is refused in words before
    it sends anything; and what a push in flight may bring is taken from the quota's room."""
    async with serving(configured(settings, free_repo_storage_bytes=600 * KIB)) as served:
        svc = served.svc
        alice = await svc.login("alice")
        token = await new_token(alice)
        url = with_token((await project_with_repo(alice))["cloneUrl"], token)
        async with svc.ctx.db.transaction(write=True) as s:
            await s.execute(update(Org).where(Org.slug == alice.personal_org).values(plan=Plan.pro.value))
        keeper = svc.ctx.adapters.git.gate.gatekeeper  # type: ignore[union-attr, attr-defined]
        assert isinstance(keeper, Gatekeeper)
        work = tmp_path / "work"
        await git("init", "-q", "-b", "main", str(work))
        await commit_random(git, work, "a.bin", 10 * KIB)

        releases = [asyncio.Event(), asyncio.Event()]
        held = [asyncio.create_task(_held_push(served.url, alice.personal_org, token, done)) for done in releases]
        try:
            await until(lambda: keeper.pushes_in_flight() == 2, "two pushes in flight")
            refused = await git("push", url, "main", cwd=work, ok=False)
            assert refused.code != 0
            assert "2 pushes to the org's repositories are in progress, the most svc takes at once" in refused.said

            releases[0].set()
            await held[0]
            await until(lambda: keeper.pushes_in_flight() == 1, "one push in flight")
            # On the free plan's 600 KiB, the one left in flight may bring 512 MiB (admitted on pro):
            # no room for another.
            async with svc.ctx.db.transaction(write=True) as s:
                await s.execute(update(Org).where(Org.slug == alice.personal_org).values(plan=Plan.free.value))
            refused = await git("push", url, "main", cwd=work, ok=False)
            assert refused.code != 0
            assert "pushes in progress may bring 512.0 MB more" in refused.said, refused.said
        finally:
            for done in releases:
                done.set()
            await asyncio.gather(*held, return_exceptions=True)
        await until(lambda: keeper.pushes_in_flight() == 0, "no push in flight")
        await git("push", url, "main", cwd=work)
        assert "refs/heads/main" in await refs_of(git, url)


async def _held_push(url: str, org: str, token: str, done: asyncio.Event) -> None:
    """A push's pack request whose body does not come until `done`: git's receive-pack waits for it."""
    async def body() -> AsyncIterator[bytes]:
        yield b""
        await done.wait()

    async with httpx.AsyncClient(auth=("x", token), timeout=120) as client:
        await client.post(f"{url}/git/{org}/web/site.git/git-receive-pack", content=body(),
                          headers={"Content-Type": "application/x-git-receive-pack-request"})


def test_the_defaults_are_the_plans() -> None:
    """One push 512 MiB; an org's repositories 1 GiB on the free plan, 25 GiB on pro."""
    assert GitSettings().repo_max_push_bytes == 512 * 1024**2
    plans = PlanSettings()
    assert (plans.free_repo_storage_bytes, plans.pro_repo_storage_bytes) == (1024**3, 25 * 1024**3)
