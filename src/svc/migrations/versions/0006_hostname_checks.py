"""hostnames: when the ownership check last ran (the verification cycle takes the oldest first)

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24 08:00:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa
import svc.models.base


revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('hostnames', schema=None) as batch_op:
        batch_op.add_column(sa.Column('checked_at', svc.models.base.UTCDateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('hostnames', schema=None) as batch_op:
        batch_op.drop_column('checked_at')
