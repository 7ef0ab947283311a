"""rate counters: tries counted in the store, shared by every svc process

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24 04:40:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa


revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('rate_counters',
    sa.Column('key', sa.String(length=64), nullable=False),
    sa.Column('window_start', sa.BigInteger(), nullable=False),
    sa.Column('count', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('key', 'window_start', name=op.f('pk_rate_counters'))
    )
    with op.batch_alter_table('rate_counters', schema=None) as batch_op:
        batch_op.create_index('ix_rate_counters_window_start', ['window_start'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('rate_counters', schema=None) as batch_op:
        batch_op.drop_index('ix_rate_counters_window_start')
    op.drop_table('rate_counters')
