"""billing: every subscription of an org followed on its own, how many are live, and the open checkout

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-29 05:45:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa
import svc.models.base


revision = '0018'
down_revision = '0017'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('billing_accounts', schema=None) as batch_op:
        batch_op.add_column(sa.Column('subscriptions', sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column('live_subscriptions', sa.Integer(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('checkout_id', sa.String(length=100), nullable=True))
        batch_op.add_column(sa.Column('checkout_url', sa.String(length=2000), nullable=True))
        batch_op.add_column(sa.Column('checkout_expires_at', svc.models.base.UTCDateTime(timezone=True),
                                      nullable=True))
    # An account that is live now counts its one subscription (the columns held the newest).
    op.execute("UPDATE billing_accounts SET live_subscriptions = 1 "
               "WHERE status IN ('active', 'trialing', 'past_due')")


def downgrade() -> None:
    with op.batch_alter_table('billing_accounts', schema=None) as batch_op:
        batch_op.drop_column('checkout_expires_at')
        batch_op.drop_column('checkout_url')
        batch_op.drop_column('checkout_id')
        batch_op.drop_column('live_subscriptions')
        batch_op.drop_column('subscriptions')
