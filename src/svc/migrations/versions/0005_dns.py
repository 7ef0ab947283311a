"""dns: zones and their record sets (the nameserver is converged from these)

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24 06:00:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa
import svc.models.base


revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('dns_zones',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('org_id', sa.String(length=40), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('dnssec', sa.String(length=16), nullable=False),
    sa.Column('ds', sa.JSON(), nullable=False),
    sa.Column('created_at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('generation', sa.Integer(), nullable=False),
    sa.Column('synced_generation', sa.Integer(), nullable=False),
    sa.Column('full_sync_generation', sa.Integer(), nullable=False),
    sa.Column('sync_due_at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['org_id'], ['orgs.id'], name=op.f('fk_dns_zones_org_id_orgs'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_dns_zones')),
    sa.UniqueConstraint('name', name=op.f('uq_dns_zones_name'))
    )
    with op.batch_alter_table('dns_zones', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_dns_zones_org_id'), ['org_id'], unique=False)

    op.create_table('dns_rrsets',
    sa.Column('zone_id', sa.String(length=40), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('type', sa.String(length=10), nullable=False),
    sa.Column('ttl', sa.Integer(), nullable=False),
    sa.Column('records', sa.JSON(), nullable=False),
    sa.Column('managed_by', sa.String(length=32), nullable=True),
    sa.Column('updated_at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['zone_id'], ['dns_zones.id'], name=op.f('fk_dns_rrsets_zone_id_dns_zones'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('zone_id', 'name', 'type', name=op.f('pk_dns_rrsets'))
    )
    with op.batch_alter_table('dns_rrsets', schema=None) as batch_op:
        batch_op.create_index('ix_dns_rrsets_zone_id_type', ['zone_id', 'type'], unique=False)
    op.create_table('dns_pending',
    sa.Column('zone_id', sa.String(length=40), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('type', sa.String(length=10), nullable=False),
    sa.Column('generation', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['zone_id'], ['dns_zones.id'], name=op.f('fk_dns_pending_zone_id_dns_zones'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('zone_id', 'name', 'type', name=op.f('pk_dns_pending'))
    )


def downgrade() -> None:
    op.drop_table('dns_pending')
    with op.batch_alter_table('dns_rrsets', schema=None) as batch_op:
        batch_op.drop_index('ix_dns_rrsets_zone_id_type')
    op.drop_table('dns_rrsets')
    with op.batch_alter_table('dns_zones', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_dns_zones_org_id'))
    op.drop_table('dns_zones')
