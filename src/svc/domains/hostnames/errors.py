from __future__ import annotations

from svc.domains.projects.errors import HostnameTaken
from svc.errors import BadRequest, NotFound

__all__ = ["DefaultHostname", "HostnameNotFound", "HostnameTaken", "InvalidHostname"]


class InvalidHostname(BadRequest):
    """A name that cannot be a custom hostname. details.errors has the same entries as every
    validation failure (svc/errors.py): the field, a machine reason and a sentence naming the
    field, never the input."""

    @classmethod
    def of(cls, predicate: str, *, field: str = "name") -> InvalidHostname:
        message = f"{field} {predicate}"
        return cls(message, details={"errors": [{"field": field, "reason": "value_error", "message": message}]})


class HostnameNotFound(NotFound):
    default_message = "No such hostname in this project"


class DefaultHostname(BadRequest):
    default_message = "The project's default hostname cannot be removed"
