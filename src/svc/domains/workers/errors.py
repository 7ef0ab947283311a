from __future__ import annotations

from svc.errors import AppError, BadRequest, NotFound


class InvalidWorker(BadRequest):
    """The bundle's worker cannot run: the runtime's words in the message (the deployment is not
    made; the live one keeps serving)."""

    code = "bad_worker"
    default_message = "The bundle's worker cannot be loaded"


class RuntimeForbidden(AppError):
    """A call to the runtime's endpoints without the runtime's token."""

    status = 403
    code = "forbidden"
    default_message = "Only svc's worker runtime may call this"


class WorkerNotFound(NotFound):
    default_message = "No deployment with a worker has that key"
