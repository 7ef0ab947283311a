"""One class per failure of the repos area (spec "Repositories, SSH keys, access tokens", errors)."""

from __future__ import annotations

from svc.errors import BadRequest, Conflict, NotFound, ServiceUnavailable


class InvalidRepo(BadRequest):
    """A field of a repository request breaking a rule only this area knows: InvalidRepo.of_field."""


class RepoNotFound(NotFound):
    default_message = "No such repository in this project"


class RepoExists(Conflict):
    code = "repo_exists"
    default_message = "This project has a repository of that name already"


class NoRef(NotFound):
    code = "no_ref"
    default_message = "No such branch, tag or commit in this repository"


class NoPath(NotFound):
    code = "no_path"
    default_message = "No such path at this ref"


class GitUnavailable(ServiceUnavailable):
    code = "git_unavailable"
    default_message = "Git hosting is not available on this svc"


class GitUnreachable(ServiceUnavailable):
    code = "git_unreachable"
    default_message = "The git node did not answer; try again in a minute"
