from __future__ import annotations

from svc.errors import AppError, BadRequest, NotFound


class BadBundle(BadRequest):
    """The body is not a bundle svc accepts. details.reason names the rule (not_gzip, truncated,
    corrupt_tar, absolute_path, parent_path, bad_name, link, special_file, duplicate, ...)."""

    code = "bad_bundle"
    default_message = "The bundle is not a valid gzipped tar with svc.json at its root"


class BundleTooLarge(AppError):
    """Over a bound (details.limit: compressed, unpacked or entries; details.max: the bound)."""

    status = 413
    code = "bundle_too_large"
    default_message = "The bundle is over a size bound"


class UnsupportedMediaType(AppError):
    status = 415
    code = "unsupported_media_type"
    default_message = "The body must be the gzipped tar itself (Content-Type application/gzip)"


class BadGitHeader(BadRequest):
    default_message = "An X-Svc-Git-* header is not valid"


class DeploymentNotFound(NotFound):
    default_message = "The project has no deployment with that version"


class ArtifactCorrupt(RuntimeError):
    """The stored bundle does not hash to its digest, or no longer unpacks (never an answer: the
    edge logs it and keeps serving what it served)."""


class InvalidWorker(BadRequest):
    """The bundle's worker cannot run: the runtime's words in the message (the deployment is not
    made; the live one keeps serving)."""

    code = "bad_worker"
    default_message = "The bundle's worker cannot be loaded"
