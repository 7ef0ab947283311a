"""HTTP only: a project's repositories (spec "Repositories, SSH keys, access tokens")."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path, Query, Response

from svc.adapters.git.port import COMMITS_LIMIT
from svc.auth.projects import ProjectAdmin, ProjectMember, ProjectViewer
from svc.deps import Ctx, Uow, api_router
from svc.domains.repos import schemas, service
from svc.uow import runs

router = api_router(tags=["repos"])

_REPOS = "/v1/orgs/{orgSlug}/projects/{projectName}/repos"
_ONE = _REPOS + "/{repoName}"
_ERROR = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
_NODE: dict[int | str, dict[str, object]] = {
    503: {"description": "The git node is missing (git_unavailable) or did not answer (git_unreachable)",
          "content": _ERROR}}

RepoNamePath = Annotated[str, Path(alias="repoName", min_length=1, max_length=100)]
RefQuery = Annotated[str | None, Query(max_length=255, description="A branch, tag or commit id; default: the "
                                                                   "repository's default branch")]
PathQuery = Annotated[str, Query(max_length=4096, description="A path in the tree; empty: the root")]


@router.get(_REPOS, response_model=schemas.RepoList, operation_id="listRepos")
async def list_repos(p: ProjectViewer, uow: Uow, ctx: Ctx) -> schemas.RepoList:
    rows = await service.list_repos(uow, p.project)
    return schemas.RepoList(repos=[service.view(ctx, p.access.org, p.project, r) for r in rows])


@router.post(_REPOS, response_model=schemas.Repo, status_code=201, operation_id="createRepo",
             summary="A repository (a row: the bare repository appears on the first git access)")
async def create_repo(body: schemas.RepoCreate, p: ProjectMember, uow: Uow, ctx: Ctx) -> schemas.Repo:
    repo = await service.create_repo(uow, p.access, p.project, body)
    return service.view(ctx, p.access.org, p.project, repo)


@router.get(_ONE, response_model=schemas.Repo, operation_id="getRepo")
async def get_repo(name: RepoNamePath, p: ProjectViewer, uow: Uow, ctx: Ctx) -> schemas.Repo:
    return service.view(ctx, p.access.org, p.project, await service.get_repo(uow, p.project, name))


@router.patch(_ONE, status_code=204, response_class=Response, operation_id="updateRepo",
              summary="Rename (no disk is touched, a push in flight goes on), visibility, default branch")
async def update_repo(name: RepoNamePath, body: schemas.RepoUpdate, p: ProjectAdmin, uow: Uow) -> Response:
    await service.update_repo(uow, p.access, p.project, name, body)
    return Response(status_code=204)


@router.delete(_ONE, status_code=204, response_class=Response, operation_id="deleteRepo",
               summary="Gone from every URL at once; the disk copy is removed after the retention period")
async def delete_repo(name: RepoNamePath, p: ProjectAdmin, uow: Uow) -> Response:
    await service.delete_repo(uow, p.access, p.project, name)
    return Response(status_code=204)


@router.get(_ONE + "/ref-updates", response_model=schemas.RefUpdateList, operation_id="listRefUpdates",
            summary="The most recent 200 ref changes; `old` recovers a commit a force-push left behind")
async def ref_updates(name: RepoNamePath, p: ProjectViewer, uow: Uow) -> schemas.RefUpdateList:
    return schemas.RefUpdateList(updates=await service.ref_updates(uow, p.project, name))


@router.get(_ONE + "/refs", response_model=schemas.RepoRefs, operation_id="listRepoRefs", responses=_NODE)
@runs(service.refs)
async def refs(name: RepoNamePath, p: ProjectViewer, uow: Uow) -> schemas.RepoRefs:
    return await service.refs(uow, p.project, name)


@router.get(_ONE + "/tree", response_model=schemas.RepoTree, operation_id="getRepoTree", responses=_NODE)
@runs(service.tree)
async def tree(name: RepoNamePath, p: ProjectViewer, uow: Uow, ref: RefQuery = None,
               path: PathQuery = "") -> schemas.RepoTree:
    return await service.tree(uow, p.project, name, ref, path)


@router.get(_ONE + "/blob", response_model=schemas.RepoBlob, operation_id="getRepoBlob", responses=_NODE)
@runs(service.blob)
async def blob(name: RepoNamePath, p: ProjectViewer, uow: Uow, path: Annotated[str, Query(min_length=1,
               max_length=4096, description="The file's path in the tree")], ref: RefQuery = None) -> schemas.RepoBlob:
    return await service.blob(uow, p.project, name, ref, path)


@router.get(_ONE + "/commits", response_model=schemas.RepoCommits, operation_id="listRepoCommits", responses=_NODE)
@runs(service.commits)
async def commits(name: RepoNamePath, p: ProjectViewer, uow: Uow, ref: RefQuery = None,
                  limit: Annotated[int, Query(ge=1, le=COMMITS_LIMIT)] = COMMITS_LIMIT) -> schemas.RepoCommits:
    return await service.commits(uow, p.project, name, ref, limit)
