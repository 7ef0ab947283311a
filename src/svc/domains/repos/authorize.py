"""Who may clone and who may push, for both git transports: one rule, read from the store on every
request (a revoked token or a deleted key stops at once; no cache).

A repository is found by its name or, over git only, by a name it had before a rename (as GitHub
redirects). Read (clone, fetch): a public repository, anyone; else the org's viewer role. Push: the member role.
A token limited to one project reaches no other; a read-only token never pushes. Whatever an outsider
must not learn (another org's repositories, a private one they cannot read) is "not found", as on
GitHub; a credential that is missing where one is needed asks for one (401), and a role too low is
said as such (403)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from svc.adapters.git.port import GitService
from svc.auth.cache import AuthCache
from svc.auth.caller import Principal
from svc.auth.principal import resolve
from svc.auth.projects import project_by_name
from svc.auth.roles import OrgAccess, at_least
from svc.domains.repos import queries
from svc.kit.store_session import StoreSession
from svc.models import Membership, Org, Project, ProjectState, Repo, RepoVisibility, Role, SSHKey, User

_NOT_FOUND = "Repository not found (or you have no access to it)"


class GitRefusal(Exception):
    """A git request refused: `status` for HTTP (401 asks the client for credentials), words for both."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class GitAccess:
    org: Org
    project: Project
    repo: Repo
    user: User | None  # None: an anonymous clone of a public repository
    access: OrgAccess | None  # the caller's role in the org (None: anonymous)


def split_path(path: str) -> tuple[str, str, str]:
    """"org/project/repo.git" (the .git optional) -> its three names; GitRefusal 404 otherwise."""
    parts = path.strip("/").split("/")
    if len(parts) != 3 or not all(parts):
        raise GitRefusal(404, f"{_NOT_FOUND}: a repository's path is <org>/<project>/<repo>.git")
    org, project, repo = parts
    return org, project, repo.removesuffix(".git")


async def by_token(session: StoreSession, token: str | None, org_slug: str, project_name: str, repo_name: str,
                   service: GitService, *, cache: AuthCache | None = None) -> GitAccess:
    """Git over HTTPS: the token from Basic auth's password (None: no credentials sent). `cache`:
    the API's credential cache (exact: cleared by every revocation, auth/cache.py), which saves a
    push's second and third requests resolving the token again."""
    if token is None:
        public = await _public_clone(session, org_slug, project_name, repo_name, service, user=None)
        if public is not None:
            return public
        raise GitRefusal(401, "Authentication required: use a personal access token (svc_pat_...) as the password")
    resolved = await resolve(session, token, org_slug, cache=cache)
    if resolved is None:
        raise GitRefusal(401, "The token is invalid, expired or revoked")
    if resolved.principal.kind != "pat":
        # The dashboard's session never reaches git (spec, Authentication 5): a session token that
        # leaks from a browser is not a key to every repository of its user.
        raise GitRefusal(401, "Git takes a personal access token (svc_pat_...), never a login session: "
                              "make one with `svc tokens create` or in the dashboard")
    return await _decide(session, resolved.principal, resolved.org, resolved.role, project_name, repo_name, service,
                         org_slug=org_slug)


async def ssh_key_known(session: StoreSession, fingerprint: str) -> bool:
    return (await session.scalar(select(SSHKey.id).where(SSHKey.fingerprint == fingerprint))) is not None


async def by_ssh_key(session: StoreSession, fingerprint: str, path: str, service: GitService) -> GitAccess:
    org_slug, project_name, repo_name = split_path(path)
    row = (await session.execute(
        select(SSHKey.id, User, Org, Membership.role).join(User, User.id == SSHKey.user_id)
        .outerjoin(Org, Org.slug == org_slug)
        .outerjoin(Membership, (Membership.org_id == Org.id) & (Membership.user_id == User.id))
        .where(SSHKey.fingerprint == fingerprint))).first()
    if row is None:
        raise GitRefusal(401, "This SSH key is not registered with svc (svc keys add)")
    key_id, user, org, role = row
    principal = Principal(user=user, kind="session", credential_id=key_id)
    return await _decide(session, principal, org if role is not None else None, role, project_name, repo_name,
                         service, org_slug=org_slug)


async def _repo(session: StoreSession, org_slug: str, project_name: str,
                repo_name: str) -> tuple[Org, Project, Repo] | None:
    org = await session.scalar(select(Org).where(Org.slug == org_slug))
    if org is None:
        return None
    project = await project_by_name(session, org.id, project_name)
    if project is None:
        return None
    repo = await queries.repo_by_git_name(session, project.id, repo_name)
    return None if repo is None else (org, project, repo)


async def _public_clone(session: StoreSession, org_slug: str, project_name: str, repo_name: str,
                        service: GitService, *, user: User | None) -> GitAccess | None:
    """A clone or fetch of a public repository, by someone with no role in its org (None otherwise)."""
    if service != "upload-pack":
        return None
    found = await _repo(session, org_slug, project_name, repo_name)
    if found is None or found[2].visibility != RepoVisibility.public:
        return None
    return GitAccess(org=found[0], project=found[1], repo=found[2], user=user, access=None)


async def _decide(session: StoreSession, principal: Principal, org: Org | None, role_name: str | None,
                  project_name: str, repo_name: str, service: GitService, *, org_slug: str) -> GitAccess:
    if org is None or role_name is None:
        # Not a member: a public repository still clones.
        public = await _public_clone(session, org_slug, project_name, repo_name, service, user=principal.user)
        if public is not None:
            return public
        raise GitRefusal(404, _NOT_FOUND)
    project = await project_by_name(session, org.id, project_name)
    repo = None if project is None else await queries.repo_by_git_name(session, project.id, repo_name)
    if project is None or repo is None:
        raise GitRefusal(404, _NOT_FOUND)
    limited_to = principal.project_id
    if limited_to is not None and limited_to != project.id:
        raise GitRefusal(403, "This token is limited to another project")
    role = Role(role_name)
    access = OrgAccess(org=org, role=role, principal=principal)
    if service == "receive-pack":
        if principal.read_only:
            raise GitRefusal(403, "This token is read-only: it can clone and fetch, not push")
        if not at_least(role, Role.member):
            raise GitRefusal(403, f"Pushing needs the member role or higher; you are {role.value}")
        if project.state != ProjectState.active:
            raise GitRefusal(403, "The project is being deleted")
    return GitAccess(org=org, project=project, repo=repo, user=principal.user, access=access)


def pusher_name(user: User) -> str:
    return user.email or user.name or f"{user.provider}:{user.subject}"
