"""Request and response bodies of the repos area, field by field as decisions.md spells them."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from svc.domains.repos.names import BRANCH_WORDS, NAME_PATTERN, NAME_WORDS, branch_problem, name_problem
from svc.kit.api import ApiInput, ApiModel, Timestamp, invalid

Visibility = Literal["private", "public"]

# The pattern is stated for clients; name_problem decides and words the refusal (also '.git').
RepoName = Annotated[str, Field(min_length=1, max_length=100, json_schema_extra={"pattern": NAME_PATTERN},
                                description=f"The repository's name: it {NAME_WORDS}, not ending in '.git'")]
BranchName = Annotated[str, Field(min_length=1, max_length=255, description=f"A branch: it {BRANCH_WORDS}")]


def _checked_name(value: str | None) -> str | None:
    if value is not None and (problem := name_problem(value)) is not None:
        raise invalid("value_error", problem)
    return value


def _checked_branch(value: str | None) -> str | None:
    if value is not None and (problem := branch_problem(value)) is not None:
        raise invalid("value_error", problem)
    return value


class RepoCreate(ApiInput):
    name: RepoName
    visibility: Visibility = "private"
    default_branch: BranchName = "main"

    _name = field_validator("name")(_checked_name)
    _branch = field_validator("default_branch")(_checked_branch)


class RepoUpdate(ApiInput):
    name: RepoName | None = None
    visibility: Visibility | None = None
    default_branch: BranchName | None = None

    _name = field_validator("name")(_checked_name)
    _branch = field_validator("default_branch")(_checked_branch)

    @model_validator(mode="after")
    def _something(self) -> RepoUpdate:
        if self.name is None and self.visibility is None and self.default_branch is None:
            raise invalid("value_error", "must change at least one of name, visibility and defaultBranch")
        return self


class Repo(ApiModel):
    name: str
    visibility: Visibility
    default_branch: str
    clone_url: str = Field(description="Git over HTTPS: {SVC_PUBLIC_URL}/git/{org}/{project}/{repo}.git")
    ssh_url: str | None = Field(description="Git over SSH (null when this svc runs no SSH server)")
    created_at: Timestamp


class RepoList(ApiModel):
    repos: list[Repo]


class DeploymentLink(ApiModel):
    id: str
    version: int


class RefUpdate(ApiModel):
    ref: str
    old: str = Field(description="The commit the ref pointed at before (40 zeros: the ref was created)")
    new: str = Field(description="The commit it points at since (40 zeros: the ref was deleted)")
    pusher: str
    at: Timestamp
    transport: Literal["http", "ssh"]
    deployment: DeploymentLink | None = Field(description="The deployment this push made (default branch only)")


class RefUpdateList(ApiModel):
    updates: list[RefUpdate]


class RepoRef(ApiModel):
    name: str
    commit: str


class RepoRefs(ApiModel):
    refs: list[RepoRef]


class TreeEntry(ApiModel):
    name: str
    path: str
    type: Literal["blob", "tree"]
    size: int | None = None


class RepoTree(ApiModel):
    entries: list[TreeEntry]
    truncated: bool


class RepoBlob(ApiModel):
    path: str
    size: int
    binary: bool
    too_large: bool
    content: str | None = Field(default=None, description="Absent for a binary blob and one over 1 MiB")


class RepoCommit(ApiModel):
    id: str
    message: str
    author: str
    at: str


class RepoCommits(ApiModel):
    commits: list[RepoCommit]
