"""svc's side of the git node (adapters/git/port.GitGatekeeper): who may use SSH, and what a push
means. Each call is its own unit of work, so nothing of the store is held while git runs.

A push's ref changes are recorded by the post-receive hook, once git has updated the refs (the
history is of what happened, not of what was asked). A push to the default branch whose tree has
svc.json at its root is then deployed (packed with `git archive`, deployed as an upload of that
bundle would be, with the commit as its provenance) and the pusher is told the version and its
address, or why it was refused, on the push's own output."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence

from sqlalchemy import select

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

log = logging.getLogger(__name__)

BUNDLE_MANIFEST = "svc.json"


class Gatekeeper:
    def __init__(self, ctx: AppContext) -> None:
        self.ctx = ctx

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

    async def before_push(self, pusher: Pusher, changes: Sequence[RefChange], incoming_bytes: int) -> HookAnswer:
        """The repository may have been deleted, or the project's teardown begun, since the push was
        let in: then nothing is taken. Nor is a push that brings objects to an org whose repositories
        would then hold more than its plan's quota (a push that brings none, deleting or moving refs,
        always goes in: it is how an org over its quota cleans up)."""
        async with unit_of_work(self.ctx, Tx.READ) as uow:
            repo = await queries.repo_by_id(uow.session, pusher.repo_id)
            project = None if repo is None else await uow.session.get(Project, repo.project_id)
            if repo is None or repo.deleted_at is not None or project is None:
                raise Refused("svc: this repository was deleted")
            if project.state != ProjectState.active:
                raise Refused("svc: the project is being deleted")
            org = await uow.session.get(Org, repo.org_id)
            assert org is not None, "a repository's org outlives it"
            plan, quota = org.plan, orgs.limits_of(self.ctx.settings, org.plan).repo_storage_bytes
            repo_ids = await queries.org_repo_ids(uow.session, org.id)
        if incoming_bytes > 0:
            # On disk now, this push's quarantine (and any other push in progress) included.
            stored = await self.node.disk_bytes(repo_ids)
            if stored > quota:
                raise Refused(quota_refusal(incoming_bytes, stored, quota, plan))
        return HookAnswer()

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
                host = projects.default_hostname(self.ctx.settings, access.org, project.name)
        except Refused as exc:
            return [f"svc: {short} was not deployed: {exc}"]
        except AppError as exc:
            return [f"svc: {short} was not deployed: {exc.message}"]
        except Exception:
            log.exception("a push's deployment failed")
            return [f"svc: {short} was not deployed: an internal error stopped it (the push itself is kept)"]
        return [f"svc: deployed {short} to {org_slug}/{project_name} as version {made.version}",
                f"svc: live at {self.ctx.settings.edge_url(host)}"]

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


async def _once(data: bytes) -> AsyncIterator[bytes]:
    yield data
