"""domains: a refund owed is the saga's next step (refund_due), and renewals keyed by their request

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-29 05:45:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa
import svc.models.base


revision = '0017'
down_revision = '0016'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('domains') as batch:
        batch.add_column(sa.Column('refund_due', sa.JSON(), nullable=True))
    op.create_table(
        'domain_renewals',
        sa.Column('id', sa.String(length=40), nullable=False),
        sa.Column('domain_id', sa.String(length=40), nullable=False),
        sa.Column('request_key', sa.String(length=200), nullable=True),
        sa.Column('key', sa.String(length=300), nullable=False),
        sa.Column('years', sa.Integer(), nullable=False),
        sa.Column('price_cents', sa.Integer(), nullable=True),
        sa.Column('status', sa.String(length=16), nullable=False),
        sa.Column('created_by', sa.String(length=40), nullable=True),
        sa.Column('created_at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column('done_at', svc.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(['domain_id'], ['domains.id'], name=op.f('fk_domain_renewals_domain_id_domains'),
                                ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['created_by'], ['users.id'], name=op.f('fk_domain_renewals_created_by_users'),
                                ondelete='SET NULL'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_domain_renewals')),
        sa.UniqueConstraint('domain_id', 'request_key', name=op.f('uq_domain_renewals_domain_id')),
    )
    op.create_index(op.f('ix_domain_renewals_domain_id'), 'domain_renewals', ['domain_id'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_domain_renewals_domain_id'), table_name='domain_renewals')
    op.drop_table('domain_renewals')
    with op.batch_alter_table('domains') as batch:
        batch.drop_column('refund_due')
