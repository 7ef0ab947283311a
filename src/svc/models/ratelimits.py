from __future__ import annotations

from sqlalchemy import BigInteger, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from svc.models.base import Base


class RateCounter(Base):
    """Tries counted per key and fixed window, in the store so that every svc process sharing it
    counts together (docs/access.md). The key is a digest: no address or host is kept."""

    __tablename__ = "rate_counters"
    __table_args__ = (Index("ix_rate_counters_window_start", "window_start"),)

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    # The window's start, in whole seconds since the epoch.
    window_start: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    count: Mapped[int]
