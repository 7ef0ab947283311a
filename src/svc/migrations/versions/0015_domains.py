"""domains: an org's domains bought through the registrar or imported, and their history

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-27 02:00:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa
import svc.models.base


revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'domains',
        sa.Column('id', sa.String(length=40), nullable=False),
        sa.Column('org_id', sa.String(length=40), nullable=False),
        sa.Column('name', sa.String(length=253), nullable=False),
        sa.Column('status', sa.String(length=24), nullable=False),
        sa.Column('source', sa.String(length=16), nullable=False),
        sa.Column('years', sa.Integer(), nullable=False),
        sa.Column('price_cents', sa.Integer(), nullable=True),
        sa.Column('charge_id', sa.String(length=200), nullable=True),
        sa.Column('attempt', sa.Integer(), nullable=False),
        sa.Column('expires_at', svc.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column('locked', sa.Boolean(), nullable=False),
        sa.Column('auto_renew', sa.Boolean(), nullable=False),
        sa.Column('nameservers', sa.JSON(), nullable=False),
        sa.Column('last_error', sa.String(length=500), nullable=True),
        sa.Column('synced_at', svc.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column('expiry_notified_for', svc.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column('created_by', sa.String(length=40), nullable=True),
        sa.Column('created_at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column('updated_at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['org_id'], ['orgs.id'], name=op.f('fk_domains_org_id_orgs'), ondelete='RESTRICT'),
        sa.ForeignKeyConstraint(['created_by'], ['users.id'], name=op.f('fk_domains_created_by_users'),
                                ondelete='SET NULL'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_domains')),
        sa.UniqueConstraint('name', name=op.f('uq_domains_name')),
    )
    op.create_index(op.f('ix_domains_org_id'), 'domains', ['org_id'], unique=False)
    op.create_table(
        'domain_events',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('domain_id', sa.String(length=40), nullable=False),
        sa.Column('at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column('action', sa.String(length=32), nullable=False),
        sa.Column('detail', sa.String(length=500), nullable=False),
        sa.ForeignKeyConstraint(['domain_id'], ['domains.id'], name=op.f('fk_domain_events_domain_id_domains'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_domain_events')),
    )
    op.create_index(op.f('ix_domain_events_domain_id'), 'domain_events', ['domain_id'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_domain_events_domain_id'), table_name='domain_events')
    op.drop_table('domain_events')
    op.drop_index(op.f('ix_domains_org_id'), table_name='domains')
    op.drop_table('domains')
