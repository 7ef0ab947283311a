"""dns: a zone's delegation as the public DNS sees it; hostnames: how an active one was proven

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-26 02:00:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa
import svc.models.base


revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('dns_zones', schema=None) as batch_op:
        batch_op.add_column(sa.Column('delegated', sa.Boolean(), nullable=True))
        batch_op.add_column(sa.Column('delegation_checked_at', svc.models.base.UTCDateTime(timezone=True),
                                      nullable=True))
        batch_op.add_column(sa.Column('delegation_seen', sa.String(length=500), nullable=True))
    with op.batch_alter_table('hostnames', schema=None) as batch_op:
        batch_op.add_column(sa.Column('proven_by', sa.String(length=8), nullable=True))
    # Hostnames active before this revision were proven by one of the three proofs, not recorded
    # which: counted as the weakest (a CNAME), so a proven owner can still take them over.
    op.execute("UPDATE hostnames SET proven_by = 'cname' WHERE kind = 'custom' AND status = 'active'")


def downgrade() -> None:
    with op.batch_alter_table('hostnames', schema=None) as batch_op:
        batch_op.drop_column('proven_by')
    with op.batch_alter_table('dns_zones', schema=None) as batch_op:
        batch_op.drop_column('delegation_seen')
        batch_op.drop_column('delegation_checked_at')
        batch_op.drop_column('delegated')
