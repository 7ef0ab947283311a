"""svc's side of the git node (adapters/git/port.GitGatekeeper): who may use SSH, and what a push
means. Each call is its own unit of work, so nothing of the store is held while git runs.

A push's ref changes are recorded by the post-receive hook, once git has updated the refs (the
history is of what happened, not of what was asked). A push to the default branch whose tree has
svc.json at its root is then deployed (packed with `git archive`, deployed as an upload of that
bundle would be, with the commit as its provenance) and the pusher is told the version and its
address, or why it was refused, on the push's own output."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from sqlalchemy import select

from svc.adapters.edge.settings import edge_url
from svc.adapters.git.port import (
    ZERO_ID,
    ArchiveTooLarge,
    GitNode,
    GitService,
    GitUnreachable,
    HookAnswer,
    Pusher,
    RefChange,
    Refused,
    SshAccess,
)
from svc.adapters.git.settings import GitSettings
from svc.auth.caller import Principal
from svc.auth.roles import OrgAccess, at_least
from svc.context import AppContext
from svc.domains.deployments import service as deployments
from svc.domains.deployments.schemas import GitInfo
from svc.domains.orgs import service as orgs
from svc.domains.projects import service as projects
from svc.domains.repos import authorize, queries
from svc.domains.repos.pages import human_size
from svc.errors import AppError
from svc.kit.clock import utcnow
from svc.kit.store_session import StoreSession
from svc.models import Membership, Org, Project, ProjectState, RefUpdate, Repo, Role, User
from svc.uow import Tx, unit_of_work

log = logging.getLogger("svc.repos")

BUNDLE_MANIFEST = "svc.json"

# Bounds of a push beyond its bytes (docs/repos.md, "What a push may store"): pushes in flight at once
# per org (each index-pack a core; a third is told to try again), ref changes in one push, and refs a
# repository may hold (each a file, and a line of every fetch's advertisement).
MAX_PUSHES_IN_FLIGHT = 2
MAX_REF_CHANGES = 1000
MAX_REFS = 10_000


@dataclass(frozen=True)
class _Target:
    """The org a push goes to, and what its plan lets its repositories hold."""

    org_id: str
    plan: str
    quota: int
    repo_ids: list[str]


class Gatekeeper:
    def __init__(self, ctx: AppContext) -> None:
        self.ctx = ctx
        # The pushes admitted and not ended, on this replica: push id -> (org id, bytes it may bring).
        self._in_flight: dict[str, tuple[str, int]] = {}
        self._admitting: dict[str, asyncio.Lock] = {}  # by org: one admission at a time counts the others

    @property
    def node(self) -> GitNode:
        node = self.ctx.adapters.git
        assert node is not None, "the gatekeeper serves a started node"
        return node

    async def ssh_key_known(self, fingerprint: str) -> bool:
        async with unit_of_work(self.ctx, Tx.READ) as uow:
            return await authorize.ssh_key_known(uow.session, fingerprint)

    async def authorize_ssh(self, fingerprint: str, service: GitService, path: str) -> SshAccess:
        async with unit_of_work(self.ctx, Tx.READ) as uow:
            try:
                found = await authorize.by_ssh_key(uow.session, fingerprint, path, service)
            except authorize.GitRefusal as exc:
                raise Refused(exc.message) from None
        pusher = None
        if service == "receive-pack" and found.user is not None:
            pusher = Pusher(repo_id=found.repo.id, user_id=found.user.id, name=authorize.pusher_name(found.user),
                            transport="ssh")
        return SshAccess(repo_id=found.repo.id, default_branch=found.repo.default_branch, service=service,
                         pusher=pusher)

    async def admit_push(self, pusher: Pusher, push: str | None) -> int:
        """A push starts only while its org has fewer than MAX_PUSHES_IN_FLIGHT in flight and room
        left: the plan's quota less what its repositories hold on disk and what the pushes in flight
        may still bring. What it may bring is the push bound or that room, whichever is less (git
        stops reading past it), so pushes at once cannot pass the quota together. An org with no room
        left pushes nothing, deletions included: git never collects garbage here, so deleting a ref
        frees no disk (deleting a repository does, once purged)."""
        target = await self._target(pusher)
        async with self._admitting.setdefault(target.org_id, asyncio.Lock()):
            flying = [size for org_id, size in self._in_flight.values() if org_id == target.org_id]
            if len(flying) >= MAX_PUSHES_IN_FLIGHT:
                raise Refused(f"svc: this push was refused: {len(flying)} pushes to the org's repositories are in "
                              f"progress, the most svc takes at once; try again when one has finished")
            stored = await self.node.disk_bytes(target.repo_ids)
            room = target.quota - stored - sum(flying)
            if room <= 0:
                raise Refused(full_refusal(stored, sum(flying), target.quota, target.plan))
            allowance = min(self.ctx.settings_of(GitSettings).repo_max_push_bytes, room)
            if push is not None:
                self._in_flight[push] = (target.org_id, allowance)
            return allowance

    def push_ended(self, push: str) -> None:
        self._in_flight.pop(push, None)

    def pushes_in_flight(self) -> int:
        return len(self._in_flight)

    async def before_push(self, pusher: Pusher, changes: Sequence[RefChange], incoming_bytes: int) -> HookAnswer:
        """The repository may have been deleted, or the project's teardown begun, since the push was
        let in: then nothing is taken. Nor is a push of more than MAX_REF_CHANGES ref changes, one
        that would leave the repository over MAX_REFS refs, or one while the org's repositories are
        over its plan's quota, this push's objects included (only a push whose every change deletes a
        ref goes in then: it adds nothing)."""
        target = await self._target(pusher)
        if len(changes) > MAX_REF_CHANGES:
            raise Refused(f"svc: this push was refused: it changes {len(changes):,} refs, more than the "
                          f"{MAX_REF_CHANGES:,} svc takes in one push; push them in parts")
        created = sum(1 for c in changes if c.old == ZERO_ID and c.new != ZERO_ID)
        deleted = sum(1 for c in changes if c.new == ZERO_ID and c.old != ZERO_ID)
        if created > deleted and (after := await self.node.ref_count(pusher.repo_id) + created - deleted) > MAX_REFS:
            raise Refused(f"svc: this push was refused: it would leave the repository with {after:,} refs, more "
                          f"than the {MAX_REFS:,} a repository may hold; delete branches or tags that are not needed")
        if not all(c.new == ZERO_ID for c in changes):
            # On disk now, this push's quarantine (and any other push in progress) included.
            stored = await self.node.disk_bytes(target.repo_ids)
            if stored > target.quota:
                raise Refused(quota_refusal(incoming_bytes, stored, target.quota, target.plan))
        return HookAnswer()

    async def _target(self, pusher: Pusher) -> _Target:
        async with unit_of_work(self.ctx, Tx.READ) as uow:
            repo = await queries.repo_by_id(uow.session, pusher.repo_id)
            project = None if repo is None else await uow.session.get(Project, repo.project_id)
            if repo is None or repo.deleted_at is not None or project is None:
                raise Refused("svc: this repository was deleted")
            if project.state != ProjectState.active:
                raise Refused("svc: the project is being deleted")
            org = await uow.session.get(Org, repo.org_id)
            assert org is not None, "a repository's org outlives it"
            quota = orgs.limits_of(self.ctx.config, org.plan).repo_storage_bytes
            return _Target(org.id, org.plan, quota, await queries.org_repo_ids(uow.session, org.id))

    async def after_push(self, pusher: Pusher, changes: Sequence[RefChange]) -> HookAnswer:
        recorded = await self._record(pusher, changes)
        if recorded is None:
            return HookAnswer()
        repo, ids = recorded
        lines: list[str] = []
        deploy_ref = f"refs/heads/{repo.default_branch}"
        for change, update_id in zip(changes, ids, strict=True):
            if not change.ref.startswith("refs/heads/"):
                continue
            branch = change.ref.removeprefix("refs/heads/")
            if change.ref != deploy_ref:
                lines.append(f"svc: '{branch}' is not the default branch ({repo.default_branch}): nothing deployed "
                             f"(previews of other branches are not built yet)")
            elif change.new != ZERO_ID:
                lines.extend(await self._deploy(pusher, repo, branch, change.new, update_id))
        return HookAnswer(lines)

    async def _record(self, pusher: Pusher, changes: Sequence[RefChange]) -> tuple[Repo, list[int]] | None:
        async with unit_of_work(self.ctx, Tx.WRITE) as uow:
            session = uow.session
            repo = await queries.repo_by_id(session, pusher.repo_id)
            if repo is None:
                return None
            now = utcnow()
            rows = [RefUpdate(repo_id=repo.id, ref=c.ref, old=c.old, new=c.new, pusher_id=pusher.user_id,
                              pusher=pusher.name, transport=pusher.transport, at=now) for c in changes]
            session.add_all(rows)
            await session.flush()
            session.expunge(repo)
            return repo, [row.id for row in rows]

    async def _deploy(self, pusher: Pusher, repo: Repo, branch: str, commit: str, update_id: int) -> list[str]:
        short = commit[:7]
        try:
            if not await self.node.has_path(repo.id, commit, BUNDLE_MANIFEST):
                return [f"svc: no {BUNDLE_MANIFEST} at the root of {branch}: nothing to deploy"]
            bundle = await self.node.archive(repo.id, commit)
            found = await self.node.commits(repo.id, commit, 1)
        except GitUnreachable as exc:
            return [f"svc: {short} was not deployed: the repository could not be read ({exc})"]
        except ArchiveTooLarge:
            return [f"svc: {short} was not deployed: its tree packs to more than a bundle may hold"]
        message = found[0].message if found else None
        try:
            async with unit_of_work(self.ctx, Tx.READ_THEN_WRITE) as uow:
                access, project = await self._deployer(uow.session, pusher, repo)
                made = await deployments.deploy(uow, access, project, _once(bundle),
                                                GitInfo(commit=commit, message=message and message[:200],
                                                        branch=branch, dirty=False))
                update = await uow.session.get(RefUpdate, update_id)
                if update is not None:
                    update.deployment_id = made.id
                org_slug, project_name = access.org.slug, project.name
                host = projects.default_hostname(self.ctx.config, access.org, project.name)
        except Refused as exc:
            return [f"svc: {short} was not deployed: {exc}"]
        except AppError as exc:
            return [f"svc: {short} was not deployed: {exc.message}"]
        except Exception:
            log.exception("a push's deployment failed")
            return [f"svc: {short} was not deployed: an internal error stopped it (the push itself is kept)"]
        return [f"svc: deployed {short} to {org_slug}/{project_name} as version {made.version}",
                f"svc: live at {edge_url(self.ctx.config, host)}"]

    @staticmethod
    async def _deployer(session: StoreSession, pusher: Pusher, repo: Repo) -> tuple[OrgAccess, Project]:
        """The pusher's role now (it may have changed during the push) and the project."""
        row = (await session.execute(
            select(User, Org, Membership.role, Project).join(Membership, Membership.user_id == User.id)
            .join(Org, Org.id == Membership.org_id).join(Project, Project.org_id == Org.id)
            .where(User.id == pusher.user_id, Org.id == repo.org_id, Project.id == repo.project_id))).first()
        if row is None or not at_least(Role(row[2]), Role.member):
            raise Refused("deploying needs the member role in the project's org")
        user, org, role, project = row
        principal = Principal(user=user, kind="session", credential_id=pusher.user_id)
        return OrgAccess(org=org, role=Role(role), principal=principal), project


def quota_refusal(incoming: int, stored: int, quota: int, plan: str) -> str:
    return (f"svc: this push was refused: it brings {human_size(incoming)}, which would put the org's repositories "
            f"at {human_size(stored)}, over the {plan} plan's repository storage of {human_size(quota)} (deleted "
            f"repositories count until they are purged); delete what is not needed, or move to a larger plan")


def full_refusal(stored: int, flying: int, quota: int, plan: str) -> str:
    pending = f", and pushes in progress may bring {human_size(flying)} more" if flying else ""
    return (f"svc: this push was refused: the org's repositories hold {human_size(stored)}{pending}, which leaves "
            f"nothing of the {plan} plan's repository storage of {human_size(quota)} (deleted repositories count "
            f"until they are purged); delete what is not needed, or move to a larger plan")


async def _once(data: bytes) -> AsyncIterator[bytes]:
    yield data
