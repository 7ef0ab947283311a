"""Every state and kind the store keeps, as the string it keeps. Columns hold these values;
code compares against these names, never against bare strings."""

from __future__ import annotations

from enum import StrEnum


class Role(StrEnum):
    """An org role: viewer < member < admin (auth/roles.py enforces them)."""

    viewer = "viewer"
    member = "member"
    admin = "admin"


class Plan(StrEnum):
    free = "free"
    pro = "pro"


class InviteState(StrEnum):
    pending = "pending"
    used = "used"
    revoked = "revoked"
    # Never stored: a pending invite past its expiresAt reads as expired.
    expired = "expired"


class ProjectState(StrEnum):
    active = "active"
    # Teardown in progress: not routed, readable, not changeable.
    deleting = "deleting"


class AccessMode(StrEnum):
    """A project's access policy. A project that never set one is public."""

    public = "public"
    org = "org"
    password = "password"


# The modes in which the edge asks svc before serving a request.
PROTECTED_ACCESS_MODES = frozenset({AccessMode.org, AccessMode.password})


class HostnameKind(StrEnum):
    default = "default"
    custom = "custom"


class HostnameStatus(StrEnum):
    pending_dns = "pending_dns"
    active = "active"


class OperationKind(StrEnum):
    teardown = "teardown"


class TeardownPhase(StrEnum):
    """A project teardown's phases, in order (domains/operations/jobs.py)."""

    routing = "routing"
    files = "files"
    grants = "grants"
    metadata = "metadata"
    done = "done"


class TerminalCode(StrEnum):
    ok = "ok"
    aborted = "aborted"
    failed = "failed"


class JobStatus(StrEnum):
    queued = "queued"
    running = "running"
    done = "done"
    failed = "failed"


class JobKind(StrEnum):
    """Every kind of job on the outbox; each area registers the handlers of its own kinds."""

    mail_send = "mail.send"
    project_teardown = "project.teardown"
    artifact_collect = "artifact.collect"
