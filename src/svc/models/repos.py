"""Git repositories of projects and each one's ref-update history. A repository lives on disk by
its id (SVC_DATA_DIR/git/<id>.git), never by its name: a rename touches no disk."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String, text
from sqlalchemy.orm import Mapped, mapped_column

from svc.models.base import Base


class Repo(Base):
    """A repository of a project. Delete is soft (`deleted_at`): gone from every URL at once, the disk
    copy removed by the purge cycle after the retention period. Names are unique among the
    project's repositories that are not deleted."""

    __tablename__ = "repos"
    __table_args__ = (
        Index("uq_repos_project_name_live", "project_id", "name", unique=True,
              sqlite_where=text("deleted_at IS NULL"), postgresql_where=text("deleted_at IS NULL")),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    # RESTRICT: an org holding repositories cannot be deleted (org_not_empty lists them); the
    # project's teardown removes them first (CASCADE from the project).
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="RESTRICT"), index=True)
    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    visibility: Mapped[str] = mapped_column(String(16))  # RepoVisibility
    default_branch: Mapped[str] = mapped_column(String(255))
    created_by: Mapped[str | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime]
    deleted_at: Mapped[datetime | None] = mapped_column(index=True)


class RefUpdate(Base):
    """One ref change of a push (recorded by the receive hooks): `old` recovers a commit a
    force-push left behind. `deployment_id`: the deployment a push to the default branch made."""

    __tablename__ = "ref_updates"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    repo_id: Mapped[str] = mapped_column(ForeignKey("repos.id", ondelete="CASCADE"), index=True)
    ref: Mapped[str] = mapped_column(String(1024))
    old: Mapped[str] = mapped_column(String(64))
    new: Mapped[str] = mapped_column(String(64))
    pusher_id: Mapped[str | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    # The pusher's name as it was (kept when the user is gone).
    pusher: Mapped[str] = mapped_column(String(320))
    transport: Mapped[str] = mapped_column(String(8))  # http | ssh
    at: Mapped[datetime]
    deployment_id: Mapped[str | None] = mapped_column(ForeignKey("deployments.id", ondelete="SET NULL"))


class SshHostKey(Base):
    """The git SSH server's host key, sealed: made once, so clients' known_hosts stay true across
    restarts and replicas. One row (`id` "host")."""

    __tablename__ = "ssh_host_keys"

    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    sealed_key: Mapped[bytes]
    created_at: Mapped[datetime]


class RepoRedirect(Base):
    """A name a repository had before a rename: git URLs with it still reach the repository (as on
    GitHub), so a push whose requests straddle a rename goes on and old clones keep fetching. A
    repository created or renamed to the name takes it back."""

    __tablename__ = "repo_redirects"

    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True)
    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    repo_id: Mapped[str] = mapped_column(ForeignKey("repos.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime]
