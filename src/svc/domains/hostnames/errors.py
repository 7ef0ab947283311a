from __future__ import annotations

from svc.domains.projects.errors import HostnameTaken
from svc.errors import BadRequest, NotFound

__all__ = ["DefaultHostname", "HostnameNotFound", "HostnameTaken", "InvalidHostname"]


class InvalidHostname(BadRequest):
    """A name that cannot be a custom hostname: InvalidHostname.of_field("name", predicate)."""


class HostnameNotFound(NotFound):
    default_message = "No such hostname in this project"


class DefaultHostname(BadRequest):
    default_message = "The project's default hostname cannot be removed"
