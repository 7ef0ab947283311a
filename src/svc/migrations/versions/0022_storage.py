"""storage: per-project grants of object storage, and the writes in flight that hold quota

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-29 18:10:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa
import svc.models.base


revision = '0022'
down_revision = '0021'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('storage_grants',
    sa.Column('project_id', sa.String(length=40), nullable=False),
    sa.Column('prefix', sa.String(length=100), nullable=False),
    sa.Column('used_bytes', sa.BigInteger(), nullable=False),
    sa.Column('reported_at', svc.models.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('created_at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('granted_by', sa.String(length=40), nullable=True),
    sa.Column('revoked_at', svc.models.base.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['granted_by'], ['users.id'], name=op.f('fk_storage_grants_granted_by_users'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['project_id'], ['projects.id'], name=op.f('fk_storage_grants_project_id_projects'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('project_id', name=op.f('pk_storage_grants'))
    )
    op.create_table('storage_reservations',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('project_id', sa.String(length=40), nullable=False),
    sa.Column('bytes', sa.BigInteger(), nullable=False),
    sa.Column('created_at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['project_id'], ['projects.id'], name=op.f('fk_storage_reservations_project_id_projects'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_storage_reservations'))
    )
    with op.batch_alter_table('storage_reservations', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_storage_reservations_created_at'), ['created_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_storage_reservations_project_id'), ['project_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('storage_reservations', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_storage_reservations_project_id'))
        batch_op.drop_index(batch_op.f('ix_storage_reservations_created_at'))

    op.drop_table('storage_reservations')
    op.drop_table('storage_grants')
