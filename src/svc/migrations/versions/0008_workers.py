"""workers: a deployment's worker, a project's bindings generation, the projects' log lines and traffic

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26 05:00:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa
import svc.models.base


revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('deployments', schema=None) as batch_op:
        batch_op.add_column(sa.Column('worker', sa.JSON(), nullable=True))
    with op.batch_alter_table('projects', schema=None) as batch_op:
        batch_op.add_column(sa.Column('bindings_generation', sa.Integer(), nullable=False, server_default='1'))
    op.create_table(
        'log_lines',
        sa.Column('seq', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
        sa.Column('project_id', sa.String(length=40), nullable=False),
        sa.Column('at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column('source', sa.String(length=8), nullable=False),
        sa.Column('level', sa.String(length=8), nullable=False),
        sa.Column('message', sa.Text(), nullable=False),
        sa.Column('stack', sa.Text(), nullable=True),
        sa.Column('request_id', sa.String(length=64), nullable=True),
        sa.ForeignKeyConstraint(['project_id'], ['projects.id'], name=op.f('fk_log_lines_project_id_projects'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('seq', name=op.f('pk_log_lines')),
    )
    op.create_index('ix_log_lines_project_seq', 'log_lines', ['project_id', 'seq'], unique=False)
    op.create_index(op.f('ix_log_lines_at'), 'log_lines', ['at'], unique=False)
    op.create_table(
        'traffic_minutes',
        sa.Column('project_id', sa.String(length=40), nullable=False),
        sa.Column('minute', svc.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column('s2xx', sa.Integer(), nullable=False),
        sa.Column('s3xx', sa.Integer(), nullable=False),
        sa.Column('s4xx', sa.Integer(), nullable=False),
        sa.Column('s5xx', sa.Integer(), nullable=False),
        sa.Column('bytes_sent', sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(['project_id'], ['projects.id'],
                                name=op.f('fk_traffic_minutes_project_id_projects'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('project_id', 'minute', name=op.f('pk_traffic_minutes')),
    )
    op.create_index(op.f('ix_traffic_minutes_minute'), 'traffic_minutes', ['minute'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_traffic_minutes_minute'), table_name='traffic_minutes')
    op.drop_table('traffic_minutes')
    op.drop_index(op.f('ix_log_lines_at'), table_name='log_lines')
    op.drop_index('ix_log_lines_project_seq', table_name='log_lines')
    op.drop_table('log_lines')
    with op.batch_alter_table('projects', schema=None) as batch_op:
        batch_op.drop_column('bindings_generation')
    with op.batch_alter_table('deployments', schema=None) as batch_op:
        batch_op.drop_column('worker')
