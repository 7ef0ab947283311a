"""Object storage's failures: one type each (what the API, env.storage and the CLI meet)."""

from __future__ import annotations

from svc.errors import AppError, BadRequest, NotFound, ServiceUnavailable


class StorageUnavailable(ServiceUnavailable):
    """The object store is not configured or did not start (`Adapters.off["objects"]` says why)."""

    code = "storage_unavailable"
    default_message = "This svc has no object store"


class NotGranted(NotFound):
    code = "not_granted"
    default_message = "This project is not granted object storage: a member grants it (POST .../storage)"


class ObjectNotFound(NotFound):
    code = "not_found"
    default_message = "No object under that key"


class BadKey(BadRequest):
    default_message = "The key is not valid"


class QuotaExceeded(AppError):
    status = 413
    code = "storage_quota_exceeded"
    default_message = "The write would pass the project's storage quota"


class LengthRequired(AppError):
    status = 411
    code = "length_required"
    default_message = "An object's upload needs a Content-Length header (its size, known before it starts)"


class RangeNotSatisfiable(AppError):
    status = 416
    code = "range_not_satisfiable"
    default_message = "The range starts at or past the object's end"


class BodyTooLong(BadRequest):
    default_message = "The body ran past its declared Content-Length: nothing was stored"
