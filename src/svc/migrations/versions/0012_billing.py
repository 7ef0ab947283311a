"""billing: an org's subscription as the provider last said it; the webhook inbox

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-26 17:10:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa
import svc.models.base


revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'billing_accounts',
        sa.Column('org_id', sa.String(length=40), nullable=False),
        sa.Column('provider', sa.String(length=32), nullable=False),
        sa.Column('customer_external_id', sa.String(length=64), nullable=False),
        sa.Column('customer_id', sa.String(length=100), nullable=True),
        sa.Column('subscription_id', sa.String(length=100), nullable=True),
        sa.Column('status', sa.String(length=32), nullable=True),
        sa.Column('current_period_end', svc.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column('cancel_at_period_end', sa.Boolean(), nullable=False),
        sa.Column('provider_modified_at', svc.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column('created_at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column('updated_at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['org_id'], ['orgs.id'], name=op.f('fk_billing_accounts_org_id_orgs'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('org_id', name=op.f('pk_billing_accounts')),
    )
    op.create_index(op.f('ix_billing_accounts_subscription_id'), 'billing_accounts', ['subscription_id'], unique=False)
    op.create_table(
        'billing_events',
        sa.Column('webhook_id', sa.String(length=200), nullable=False),
        sa.Column('type', sa.String(length=100), nullable=False),
        sa.Column('received_at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column('outcome', sa.String(length=16), nullable=False),
        sa.Column('detail', sa.String(length=1000), nullable=True),
        sa.Column('org_slug', sa.String(length=64), nullable=True),
        sa.Column('payload', sa.JSON(), nullable=False),
        sa.Column('deliveries', sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint('webhook_id', name=op.f('pk_billing_events')),
    )
    op.create_index(op.f('ix_billing_events_received_at'), 'billing_events', ['received_at'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_billing_events_received_at'), table_name='billing_events')
    op.drop_table('billing_events')
    op.drop_index(op.f('ix_billing_accounts_subscription_id'), table_name='billing_accounts')
    op.drop_table('billing_accounts')
