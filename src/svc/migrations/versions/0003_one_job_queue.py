"""one job queue: outgoing mail is delivered by mail.send jobs; teardown phases by cascade

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24 04:30:00
"""
from __future__ import annotations

import secrets
from datetime import UTC, datetime

from alembic import op
import sqlalchemy as sa
import svc.models.base


revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None

_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
MAIL_MAX_ATTEMPTS = 14

jobs = sa.table(
    'jobs',
    sa.column('id', sa.String), sa.column('kind', sa.String), sa.column('payload', sa.JSON),
    sa.column('status', sa.String), sa.column('dedupe_key', sa.String),
    sa.column('run_at', svc.models.base.UTCDateTime(timezone=True)), sa.column('attempts', sa.Integer),
    sa.column('max_attempts', sa.Integer), sa.column('created_at', svc.models.base.UTCDateTime(timezone=True)),
)


def _job_id() -> str:
    return "job_" + "".join(secrets.choice(_ALPHABET) for _ in range(22))


def upgrade() -> None:
    conn = op.get_bind()
    now = datetime.now(UTC)
    # Every message still to be sent gets its delivery job, due when its next attempt was.
    unsent = conn.execute(sa.text(
        "SELECT id, next_attempt_at FROM outbound_mail WHERE sent_at IS NULL AND failed_at IS NULL")).all()
    rows = [{"id": _job_id(), "kind": "mail.send", "payload": {"mail_id": mail_id}, "status": "queued",
             "dedupe_key": None, "run_at": next_at or now, "attempts": 0, "max_attempts": MAIL_MAX_ATTEMPTS,
             "created_at": now} for mail_id, next_at in unsent]
    if rows:
        op.bulk_insert(jobs, rows)
    # The periodic send cycle is gone.
    conn.execute(sa.text("DELETE FROM jobs WHERE kind = 'cycle.mail.send' AND status IN ('queued', 'running')"))
    conn.execute(sa.text("DELETE FROM cycles WHERE name = 'mail.send'"))
    with op.batch_alter_table('outbound_mail', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_outbound_mail_next_attempt_at'))
        batch_op.drop_column('next_attempt_at')
        batch_op.drop_column('attempts')
    # Teardown's hostnames and secrets phases became part of metadata (deleting the project row
    # removes them by foreign-key cascade).
    conn.execute(sa.text("UPDATE operations SET phase = 'metadata' WHERE phase IN ('hostnames', 'secrets')"))


def downgrade() -> None:
    with op.batch_alter_table('outbound_mail', schema=None) as batch_op:
        batch_op.add_column(sa.Column('attempts', sa.Integer(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('next_attempt_at', svc.models.base.UTCDateTime(timezone=True), nullable=True))
    op.execute("UPDATE outbound_mail SET next_attempt_at = created_at")
    with op.batch_alter_table('outbound_mail', schema=None) as batch_op:
        batch_op.alter_column('next_attempt_at', nullable=False)
        batch_op.create_index(batch_op.f('ix_outbound_mail_next_attempt_at'), ['next_attempt_at'], unique=False)
    op.execute("DELETE FROM jobs WHERE kind = 'mail.send' AND status IN ('queued', 'running')")
