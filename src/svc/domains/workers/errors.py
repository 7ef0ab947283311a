from __future__ import annotations

from svc.errors import AppError, NotFound


class RuntimeForbidden(AppError):
    """A call to the runtime's endpoints without the runtime's token."""

    status = 403
    code = "forbidden"
    default_message = "Only svc's worker runtime may call this"


class WorkerNotFound(NotFound):
    default_message = "No deployment with a worker has that key"
