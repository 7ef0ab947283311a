from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from svc.models.base import Base


class Project(Base):
    __tablename__ = "projects"
    __table_args__ = (UniqueConstraint("org_id", "name"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    # RESTRICT: an org is deleted only once it holds no projects (org_not_empty).
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="RESTRICT"), index=True)
    name: Mapped[str] = mapped_column(String(32))
    created_at: Mapped[datetime]
    created_by: Mapped[str | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    # The live pointer: deploy and rollback move it, nothing else does.
    live_deployment_id: Mapped[str | None] = mapped_column(String(40))
    # active | deleting (teardown in progress: not routed, no new deployments)
    state: Mapped[str] = mapped_column(String(16), default="active")
    # public | org | password. A project that never set a policy is public.
    access_mode: Mapped[str] = mapped_column(String(16), default="public")
    access_password_hash: Mapped[str | None] = mapped_column(String(200))
    bypass_secret_hash: Mapped[str | None] = mapped_column(String(64))
    # Bumped by every policy change, so edge cookies and cached checks of the old policy stop working.
    access_generation: Mapped[int] = mapped_column(default=1)
    next_version: Mapped[int] = mapped_column(default=1)
    manifest: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # Bumped by every change of what the worker's env holds (a secret set or deleted, a resource
    # granted): part of the worker's key, so the runtime loads the new env on the next request.
    bindings_generation: Mapped[int] = mapped_column(default=1)


class Deployment(Base):
    """Immutable once written; the artifact is content-addressed by `digest`."""

    __tablename__ = "deployments"
    __table_args__ = (UniqueConstraint("project_id", "version"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    version: Mapped[int]
    digest: Mapped[str] = mapped_column(String(80), index=True)
    size_bytes: Mapped[int]
    unpacked_bytes: Mapped[int]
    file_count: Mapped[int]
    manifest: Mapped[dict[str, Any]]
    created_at: Mapped[datetime]
    uploader_id: Mapped[str | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    git_commit: Mapped[str | None] = mapped_column(String(64))
    git_message: Mapped[str | None] = mapped_column(String(200))
    git_branch: Mapped[str | None] = mapped_column(String(255))
    git_dirty: Mapped[bool | None]
    # The bundle's worker, as the runtime runs it: {"main", "compatibilityDate", "assets"}; None
    # for a static site (domains/deployments/worker_code.py).
    worker: Mapped[dict[str, Any] | None]


class Hostname(Base):
    """A name routed to a project. The default one is issued at project creation."""

    __tablename__ = "hostnames"

    host: Mapped[str] = mapped_column(String(253), primary_key=True)
    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(16))  # default | custom
    status: Mapped[str] = mapped_column(String(16))  # pending_dns | active
    verification_value: Mapped[str | None] = mapped_column(String(100))
    last_error: Mapped[str | None] = mapped_column(String(500))
    created_at: Mapped[datetime]
    # When the ownership check last ran (custom hostnames): the cycle takes the oldest first.
    checked_at: Mapped[datetime | None]
    # How an active custom hostname was proven: "zone" (in the org's delegated zone), "txt" (its
    # own TXT record) or "cname" (a CNAME to the fallback origin, which any org can point: a proof
    # another org's TXT or delegated zone takes over); null for pending and default hostnames.
    proven_by: Mapped[str | None] = mapped_column(String(8), default=None)


class Secret(Base):
    __tablename__ = "secrets"

    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True)
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    version: Mapped[int]
    # AES-GCM sealed with the key from settings; never returned, never logged.
    sealed_value: Mapped[bytes]
    updated_at: Mapped[datetime]


class Operation(Base):
    """A long-running change (teardown, database restore ...) with phases, one per project at a time."""

    __tablename__ = "operations"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    org_id: Mapped[str | None] = mapped_column(ForeignKey("orgs.id", ondelete="SET NULL"), index=True)
    # Not a foreign key: the operation outlives the project it tore down.
    project_id: Mapped[str] = mapped_column(String(40), index=True)
    project_name: Mapped[str] = mapped_column(String(32))
    kind: Mapped[str] = mapped_column(String(32))
    phase: Mapped[str] = mapped_column(String(32))
    terminal_code: Mapped[str | None] = mapped_column(String(16))
    created_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]
    # Set while the operation runs; a partial unique index would be nicer but is not portable.
    running_key: Mapped[str | None] = mapped_column(String(40), unique=True)
    # What the operation works on (a restore's {"epoch", "seq"}), and why it failed, in words.
    data: Mapped[dict[str, Any] | None] = mapped_column(default=None)
    error: Mapped[str | None] = mapped_column(String(1000), default=None)


class AccessGrant(Base):
    """A one-time code from the org login round trip, exchanged by the edge for a host cookie."""

    __tablename__ = "access_grants"

    code_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    host: Mapped[str] = mapped_column(String(253))
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    next_path: Mapped[str] = mapped_column(String(2048))
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime]


class EdgeState(Base):
    """One row: a counter bumped by every change the edge must converge to (deploy, rollback,
    policy, hostname). Each svc process polls it and rewrites its edge when it moved."""

    __tablename__ = "edge_state"

    id: Mapped[int] = mapped_column(primary_key=True)
    generation: Mapped[int]
    changed_at: Mapped[datetime]
