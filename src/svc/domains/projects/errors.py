from __future__ import annotations

from svc.errors import BadRequest, Conflict


class ProjectNameTaken(Conflict):
    code = "project_name_taken"
    default_message = "This org already has a project with that name"


class HostnameTaken(Conflict):
    code = "hostname_taken"
    default_message = "The project's default hostname is already used by another project"


class ProjectLimit(Conflict):
    code = "project_limit"
    default_message = "The org's plan allows no more projects"


class NameTooLongForHostname(BadRequest):
    """The default hostname `{project}-{org}` is one DNS label, and a label has at most 63 bytes."""

    default_message = "The project name is too long for this org's default hostname"


class ProjectConfirmMismatch(BadRequest):
    default_message = "confirm must equal the project name"
