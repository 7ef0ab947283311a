"""ai: per-project grants, the org's credit, the ledger, the calls in flight

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26 19:40:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa
import svc.models.base


revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'ai_grants',
        sa.Column('project_id', sa.String(length=40), nullable=False),
        sa.Column('org_id', sa.String(length=40), nullable=False),
        sa.Column('granted_at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column('granted_by', sa.String(length=40), nullable=True),
        sa.ForeignKeyConstraint(['project_id'], ['projects.id'], name=op.f('fk_ai_grants_project_id_projects'),
                                ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['org_id'], ['orgs.id'], name=op.f('fk_ai_grants_org_id_orgs'), ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['granted_by'], ['users.id'], name=op.f('fk_ai_grants_granted_by_users'),
                                ondelete='SET NULL'),
        sa.PrimaryKeyConstraint('project_id', name=op.f('pk_ai_grants')),
    )
    op.create_index(op.f('ix_ai_grants_org_id'), 'ai_grants', ['org_id'], unique=False)
    op.create_table(
        'ai_credits',
        sa.Column('org_id', sa.String(length=40), nullable=False),
        sa.Column('balance_micro_cents', sa.BigInteger(), nullable=False),
        sa.Column('reserved_micro_cents', sa.BigInteger(), nullable=False),
        sa.Column('payment_customer_id', sa.String(length=100), nullable=True),
        sa.Column('autotopup_enabled', sa.Boolean(), nullable=False),
        sa.Column('autotopup_threshold_micro_cents', sa.BigInteger(), nullable=True),
        sa.Column('autotopup_amount_micro_cents', sa.BigInteger(), nullable=True),
        sa.Column('updated_at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['org_id'], ['orgs.id'], name=op.f('fk_ai_credits_org_id_orgs'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('org_id', name=op.f('pk_ai_credits')),
    )
    op.create_table(
        'ai_ledger',
        sa.Column('ledger_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True,
                  nullable=False),
        sa.Column('org_id', sa.String(length=40), nullable=False),
        sa.Column('kind', sa.String(length=16), nullable=False),
        sa.Column('micro_cents', sa.BigInteger(), nullable=False),
        sa.Column('created_at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column('project_id', sa.String(length=40), nullable=True),
        sa.Column('model', sa.String(length=100), nullable=True),
        sa.Column('input_tokens', sa.Integer(), nullable=True),
        sa.Column('output_tokens', sa.Integer(), nullable=True),
        sa.Column('order_id', sa.String(length=100), nullable=True),
        sa.Column('note', sa.String(length=500), nullable=True),
        sa.ForeignKeyConstraint(['org_id'], ['orgs.id'], name=op.f('fk_ai_ledger_org_id_orgs'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('ledger_id', name=op.f('pk_ai_ledger')),
        sa.UniqueConstraint('order_id', name=op.f('uq_ai_ledger_order_id')),
    )
    op.create_table(
        'ai_reservations',
        sa.Column('id', sa.String(length=40), nullable=False),
        sa.Column('org_id', sa.String(length=40), nullable=False),
        sa.Column('project_id', sa.String(length=40), nullable=False),
        sa.Column('micro_cents', sa.BigInteger(), nullable=False),
        sa.Column('created_at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['org_id'], ['orgs.id'], name=op.f('fk_ai_reservations_org_id_orgs'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_ai_reservations')),
    )
    op.create_index(op.f('ix_ai_reservations_project_id'), 'ai_reservations', ['project_id'], unique=False)
    op.create_index('ix_ai_ledger_org_id_ledger_id', 'ai_ledger', ['org_id', 'ledger_id'], unique=False)
    op.create_index(op.f('ix_ai_ledger_created_at'), 'ai_ledger', ['created_at'], unique=False)
    op.create_index(op.f('ix_ai_ledger_project_id'), 'ai_ledger', ['project_id'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_ai_ledger_project_id'), table_name='ai_ledger')
    op.drop_index(op.f('ix_ai_ledger_created_at'), table_name='ai_ledger')
    op.drop_index('ix_ai_ledger_org_id_ledger_id', table_name='ai_ledger')
    op.drop_table('ai_ledger')
    op.drop_index(op.f('ix_ai_reservations_project_id'), table_name='ai_reservations')
    op.drop_table('ai_reservations')
    op.drop_table('ai_credits')
    op.drop_index(op.f('ix_ai_grants_org_id'), table_name='ai_grants')
    op.drop_table('ai_grants')
