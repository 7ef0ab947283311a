from __future__ import annotations

from svc.errors import AppError, Conflict, NotFound, ServiceUnavailable


class DatabaseNotFound(NotFound):
    default_message = "This project has no database; create it first (svc db create)"


class TokenNotFound(NotFound):
    default_message = "No such token user"


class TooManyTokens(Conflict):
    code = "too_many_tokens"
    default_message = "This project has too many token users; delete one or let them expire"


class DatabasesOff(ServiceUnavailable):
    """No node: the server runs without project databases (the banner says why)."""

    code = "no_node_admin"
    default_message = "Project databases are off on this server"


class NodeUnavailable(ServiceUnavailable):
    code = "no_home_node"
    default_message = "The database node did not answer; try again"


class QueryFailed(AppError):
    """A worker's statement PostgreSQL refused: its SQLSTATE and message, for the worker."""

    status = 422
    code = "sql_error"
