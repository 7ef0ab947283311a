"""project databases: the grant (sealed password, epoch, change check), token users, generations,
operations' data and error

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26 13:00:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa
import svc.models.base


revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('operations', schema=None) as batch_op:
        batch_op.add_column(sa.Column('data', sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column('error', sa.String(length=1000), nullable=True))
    op.create_table(
        'project_databases',
        sa.Column('project_id', sa.String(length=40), nullable=False),
        sa.Column('sealed_password', sa.LargeBinary(), nullable=False),
        sa.Column('created_at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column('created_by', sa.String(length=40), nullable=True),
        sa.Column('epoch', sa.Integer(), nullable=False),
        sa.Column('change_marker', sa.String(length=200), nullable=True),
        sa.Column('last_checked_at', svc.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(['project_id'], ['projects.id'], name=op.f('fk_project_databases_project_id_projects'),
                                ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['created_by'], ['users.id'], name=op.f('fk_project_databases_created_by_users'),
                                ondelete='SET NULL'),
        sa.PrimaryKeyConstraint('project_id', name=op.f('pk_project_databases')),
    )
    op.create_table(
        'database_tokens',
        sa.Column('user', sa.String(length=63), nullable=False),
        sa.Column('project_id', sa.String(length=40), nullable=False),
        sa.Column('created_at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column('expires_at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column('created_by', sa.String(length=40), nullable=True),
        sa.ForeignKeyConstraint(['project_id'], ['projects.id'], name=op.f('fk_database_tokens_project_id_projects'),
                                ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['created_by'], ['users.id'], name=op.f('fk_database_tokens_created_by_users'),
                                ondelete='SET NULL'),
        sa.PrimaryKeyConstraint('user', name=op.f('pk_database_tokens')),
    )
    op.create_index(op.f('ix_database_tokens_project_id'), 'database_tokens', ['project_id'], unique=False)
    op.create_table(
        'database_generations',
        sa.Column('id', sa.String(length=40), nullable=False),
        sa.Column('project_id', sa.String(length=40), nullable=False),
        sa.Column('epoch', sa.Integer(), nullable=False),
        sa.Column('seq', sa.Integer(), nullable=False),
        sa.Column('kind', sa.String(length=16), nullable=False),
        sa.Column('blob_key', sa.String(length=300), nullable=False),
        sa.Column('bytes', sa.BigInteger(), nullable=False),
        sa.Column('sha256', sa.String(length=64), nullable=False),
        sa.Column('created_at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column('row_counts', sa.JSON(), nullable=False),
        sa.Column('verified', sa.Boolean(), nullable=True),
        sa.Column('restore_seconds', sa.Float(), nullable=True),
        sa.Column('verify_error', sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_database_generations')),
        sa.UniqueConstraint('project_id', 'epoch', 'seq', 'kind', name=op.f('uq_database_generations_project_id')),
    )
    op.create_index('ix_database_generations_project_created', 'database_generations',
                    ['project_id', 'created_at'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_database_generations_project_created', table_name='database_generations')
    op.drop_table('database_generations')
    op.drop_index(op.f('ix_database_tokens_project_id'), table_name='database_tokens')
    op.drop_table('database_tokens')
    op.drop_table('project_databases')
    with op.batch_alter_table('operations', schema=None) as batch_op:
        batch_op.drop_column('error')
        batch_op.drop_column('data')
