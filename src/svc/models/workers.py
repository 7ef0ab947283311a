from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from svc.models.base import Base


class LogLine(Base):
    """One line of a project's logs: what its worker printed (console.*), an exception it threw, or
    a request the edge answered. Kept for SVC_LOG_RETENTION_HOURS (domains/workers)."""

    __tablename__ = "log_lines"
    __table_args__ = (Index("ix_log_lines_project_seq", "project_id", "seq"),)

    # Rising in the order lines were stored: `svc logs --follow` and the Logs tab ask for what is after.
    # (SQLite numbers rows itself only in an INTEGER PRIMARY KEY.)
    seq: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True,
                                     autoincrement=True)
    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    at: Mapped[datetime] = mapped_column(index=True)
    # worker | edge
    source: Mapped[str] = mapped_column(String(8))
    # debug | info | log | warn | error (worker); the status class for the edge: 2xx ... 5xx
    level: Mapped[str] = mapped_column(String(8))
    message: Mapped[str] = mapped_column(Text)
    stack: Mapped[str | None] = mapped_column(Text)
    request_id: Mapped[str | None] = mapped_column(String(64))


class TrafficMinute(Base):
    """A project's requests at the edge in one minute, by status class, and the bytes served: the
    rollup the Overview's traffic chart is drawn from (kept SVC_TRAFFIC_RETENTION_DAYS)."""

    __tablename__ = "traffic_minutes"

    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True)
    minute: Mapped[datetime] = mapped_column(primary_key=True, index=True)
    s2xx: Mapped[int] = mapped_column(default=0)
    s3xx: Mapped[int] = mapped_column(default=0)
    s4xx: Mapped[int] = mapped_column(default=0)
    s5xx: Mapped[int] = mapped_column(default=0)
    bytes_sent: Mapped[int] = mapped_column(BigInteger, default=0)
