from __future__ import annotations

from svc.errors import NotFound


class OperationNotFound(NotFound):
    default_message = "No such operation"
