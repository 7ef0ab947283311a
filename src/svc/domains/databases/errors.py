from __future__ import annotations

from svc.errors import AppError, BadRequest, Conflict, NotFound, ServiceUnavailable


class DatabaseNotFound(NotFound):
    default_message = "This project has no database; create it first (svc db create)"


class TokenNotFound(NotFound):
    default_message = "No such token user"


class TooManyTokens(Conflict):
    code = "too_many_tokens"
    default_message = "This project has too many token users; delete one or let them expire"


class ConnectionCeiling(Conflict):
    """A token user would take the project past its plan's connection ceiling (the message says how)."""

    code = "connection_ceiling"
    default_message = "This project's connections are at its plan's ceiling"


class NodeFull(Conflict):
    """Another project's ceiling would take the node past what it keeps for projects."""

    code = "node_full"
    default_message = "The database node has no room for another project's connections; ask the operator"


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


class GenerationNotFound(NotFound):
    default_message = "No generation with that epoch and seq"


class OperationNotFound(NotFound):
    default_message = "No such operation on this project"


class OperationInProgress(Conflict):
    code = "operation_in_progress"
    default_message = "Another operation is running on this project's database; wait for it to finish"


class NotAbortable(Conflict):
    code = "not_abortable"
    default_message = "This operation is past the point where it can be aborted"


class Suspended(Conflict):
    code = "suspended"
    default_message = "The database is closed by a running operation; try again when it has finished"


class ConfirmMismatch(BadRequest):
    code = "confirm_mismatch"
    default_message = "confirm must be the project's name, exactly"


class ExportFailed(AppError):
    status = 502
    code = "export_failed"
    default_message = "The database node could not make the export"
