"""ai: models whose provider billed a call more than svc held (svc's loss, and the gateway's stop
until the operator resumes the model)

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-29 05:40:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa
import svc.models.base


revision = '0019'
down_revision = '0018'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'ai_model_overruns',
        sa.Column('model', sa.String(length=100), nullable=False),
        sa.Column('stopped_since', svc.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column('overruns', sa.Integer(), nullable=False),
        sa.Column('loss_micro_cents', sa.BigInteger(), nullable=False),
        sa.Column('last_at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column('last_held_micro_cents', sa.BigInteger(), nullable=False),
        sa.Column('last_billed_micro_cents', sa.BigInteger(), nullable=False),
        sa.Column('last_org_id', sa.String(length=40), nullable=True),
        sa.Column('last_project_id', sa.String(length=40), nullable=True),
        sa.Column('resumed_at', svc.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column('resumed_by', sa.String(length=100), nullable=True),
        sa.PrimaryKeyConstraint('model', name=op.f('pk_ai_model_overruns')),
    )


def downgrade() -> None:
    op.drop_table('ai_model_overruns')
