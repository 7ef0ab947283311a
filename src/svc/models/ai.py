"""AI: per-project grants, the org's credit, and its ledger (the canonical record of amounts: one
row per call, top-up or adjustment, integer micro-cents)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from svc.models.base import Base


class AIGrant(Base):
    """A project may call env.ai (its live bundle declaring `"ai": true` too)."""

    __tablename__ = "ai_grants"

    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True)
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"), index=True)
    granted_at: Mapped[datetime]
    granted_by: Mapped[str | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))


class AICredit(Base):
    """An org's AI credit: the balance the ledger sums to (kept in the same transaction as each
    row), what calls in flight hold back, and the auto top-up the org consented to."""

    __tablename__ = "ai_credits"

    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"), primary_key=True)
    # Micro-cents; may be negative (the check precedes a call, the deduction follows it).
    balance_micro_cents: Mapped[int] = mapped_column(BigInteger, default=0)
    # The worst-case cost of the calls in flight, held until each settles.
    reserved_micro_cents: Mapped[int] = mapped_column(BigInteger, default=0)
    # A payment method stored at the provider by a first manual purchase (its customer there).
    payment_customer_id: Mapped[str | None] = mapped_column(String(100))
    autotopup_enabled: Mapped[bool] = mapped_column(default=False)
    autotopup_threshold_micro_cents: Mapped[int | None] = mapped_column(BigInteger)
    autotopup_amount_micro_cents: Mapped[int | None] = mapped_column(BigInteger)
    # The UTC day (YYYY-MM-DD) autotopups_on_day counts the charges of: at most AISettings'
    # ai_autotopup_per_day a day, declined ones included.
    autotopup_day: Mapped[str | None] = mapped_column(String(10))
    autotopups_on_day: Mapped[int] = mapped_column(default=0, server_default="0")
    # A charge asked of the provider and not yet paid (its order.paid clears it): no second one meanwhile.
    autotopup_charging_since: Mapped[datetime | None]
    # Why auto top-up stopped (the provider declined the saved card): none is tried again until the
    # org buys credit by hand or turns auto top-up on again. No retry storm.
    autotopup_stopped: Mapped[str | None] = mapped_column(String(300))
    updated_at: Mapped[datetime]


class AILedgerEntry(Base):
    """One amount: a call (negative), a top-up (positive) or an operator's adjustment."""

    __tablename__ = "ai_ledger"
    __table_args__ = (Index("ix_ai_ledger_org_id_ledger_id", "org_id", "ledger_id"),
                      # A project's calls of the last minute (the gateway's maxCallsPerMinute).
                      Index("ix_ai_ledger_project_id_created_at", "project_id", "created_at"))

    ledger_id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"),
                                           primary_key=True, autoincrement=True)
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"))
    # call | topup | autotopup | adjust
    kind: Mapped[str] = mapped_column(String(16))
    micro_cents: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(index=True)
    project_id: Mapped[str | None] = mapped_column(String(40), index=True)
    model: Mapped[str | None] = mapped_column(String(100))
    input_tokens: Mapped[int | None]
    output_tokens: Mapped[int | None]
    # A top-up's order at the billing provider: unique, so order.paid raises the balance once.
    order_id: Mapped[str | None] = mapped_column(String(100), unique=True)
    # An adjustment's reason, a call's outcome (cut off midway, say).
    note: Mapped[str | None] = mapped_column(String(500))


class AIReservation(Base):
    """A call in flight: its worst-case cost, held from the org's credit (and counted against the
    project's caps) until the call settles to its exact cost."""

    __tablename__ = "ai_reservations"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    org_id: Mapped[str] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"))
    project_id: Mapped[str] = mapped_column(String(40), index=True)
    micro_cents: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime]


class AIUsage(Base):
    """What a project's calls cost, by minute: written with each call's ledger row (the same
    transaction), so the gateway reads a day's spend in at most 1,440 rows, however many calls it
    had. Rows older than a day are removed by the AI area's cycle."""

    __tablename__ = "ai_usage"

    project_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    minute: Mapped[datetime] = mapped_column(primary_key=True)
    calls: Mapped[int] = mapped_column(default=0)
    micro_cents: Mapped[int] = mapped_column(BigInteger, default=0)


class AIModelOverrun(Base):
    """A model whose provider billed a call more than svc held for it (its estimate is wrong): svc's
    loss, kept for the operator, and while `stopped_since` is set the gateway refuses the model's
    calls (503 ai_model_stopped) until the operator resumes it (svc admin ai resume)."""

    __tablename__ = "ai_model_overruns"

    model: Mapped[str] = mapped_column(String(100), primary_key=True)
    # Set by an overrun, cleared by the operator: the gateway lends to the model again.
    stopped_since: Mapped[datetime | None]
    # Every overrun of the model and what svc bore for them (the org was charged the hold).
    overruns: Mapped[int] = mapped_column(default=0)
    loss_micro_cents: Mapped[int] = mapped_column(BigInteger, default=0)
    # The last one: when, what was held and what the provider billed, for whom.
    last_at: Mapped[datetime]
    last_held_micro_cents: Mapped[int] = mapped_column(BigInteger, default=0)
    last_billed_micro_cents: Mapped[int] = mapped_column(BigInteger, default=0)
    last_org_id: Mapped[str | None] = mapped_column(String(40))
    last_project_id: Mapped[str | None] = mapped_column(String(40))
    # Who resumed it last, and when (the operator at the server).
    resumed_at: Mapped[datetime | None]
    resumed_by: Mapped[str | None] = mapped_column(String(100))
