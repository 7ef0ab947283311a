"""repos: projects' git repositories, their former names, their ref-update history, the SSH host key, and
access tokens for machines
(limited to one project, read-only)

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-27 05:00:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa
import svc.models.base


revision = '0016'
down_revision = '0015'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'repos',
        sa.Column('id', sa.String(length=40), nullable=False),
        sa.Column('org_id', sa.String(length=40), nullable=False),
        sa.Column('project_id', sa.String(length=40), nullable=False),
        sa.Column('name', sa.String(length=100), nullable=False),
        sa.Column('visibility', sa.String(length=16), nullable=False),
        sa.Column('default_branch', sa.String(length=255), nullable=False),
        sa.Column('created_by', sa.String(length=40), nullable=True),
        sa.Column('created_at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column('deleted_at', svc.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(['org_id'], ['orgs.id'], name=op.f('fk_repos_org_id_orgs'), ondelete='RESTRICT'),
        sa.ForeignKeyConstraint(['project_id'], ['projects.id'], name=op.f('fk_repos_project_id_projects'),
                                ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['created_by'], ['users.id'], name=op.f('fk_repos_created_by_users'),
                                ondelete='SET NULL'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_repos')),
    )
    op.create_index(op.f('ix_repos_org_id'), 'repos', ['org_id'], unique=False)
    op.create_index(op.f('ix_repos_project_id'), 'repos', ['project_id'], unique=False)
    op.create_index(op.f('ix_repos_deleted_at'), 'repos', ['deleted_at'], unique=False)
    op.create_index('uq_repos_project_name_live', 'repos', ['project_id', 'name'], unique=True,
                    sqlite_where=sa.text('deleted_at IS NULL'), postgresql_where=sa.text('deleted_at IS NULL'))
    op.create_table(
        'ref_updates',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('repo_id', sa.String(length=40), nullable=False),
        sa.Column('ref', sa.String(length=1024), nullable=False),
        sa.Column('old', sa.String(length=64), nullable=False),
        sa.Column('new', sa.String(length=64), nullable=False),
        sa.Column('pusher_id', sa.String(length=40), nullable=True),
        sa.Column('pusher', sa.String(length=320), nullable=False),
        sa.Column('transport', sa.String(length=8), nullable=False),
        sa.Column('at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column('deployment_id', sa.String(length=40), nullable=True),
        sa.ForeignKeyConstraint(['repo_id'], ['repos.id'], name=op.f('fk_ref_updates_repo_id_repos'),
                                ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['pusher_id'], ['users.id'], name=op.f('fk_ref_updates_pusher_id_users'),
                                ondelete='SET NULL'),
        sa.ForeignKeyConstraint(['deployment_id'], ['deployments.id'],
                                name=op.f('fk_ref_updates_deployment_id_deployments'), ondelete='SET NULL'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_ref_updates')),
    )
    op.create_index(op.f('ix_ref_updates_repo_id'), 'ref_updates', ['repo_id'], unique=False)
    op.create_table(
        'repo_redirects',
        sa.Column('project_id', sa.String(length=40), nullable=False),
        sa.Column('name', sa.String(length=100), nullable=False),
        sa.Column('repo_id', sa.String(length=40), nullable=False),
        sa.Column('created_at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['project_id'], ['projects.id'], name=op.f('fk_repo_redirects_project_id_projects'),
                                ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['repo_id'], ['repos.id'], name=op.f('fk_repo_redirects_repo_id_repos'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('project_id', 'name', name=op.f('pk_repo_redirects')),
    )
    op.create_index(op.f('ix_repo_redirects_repo_id'), 'repo_redirects', ['repo_id'], unique=False)
    op.create_table(
        'ssh_host_keys',
        sa.Column('id', sa.String(length=16), nullable=False),
        sa.Column('sealed_key', sa.LargeBinary(), nullable=False),
        sa.Column('created_at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_ssh_host_keys')),
    )
    with op.batch_alter_table('access_tokens', schema=None) as batch_op:
        batch_op.add_column(sa.Column('project_id', sa.String(length=40), nullable=True))
        batch_op.add_column(sa.Column('read_only', sa.Boolean(), nullable=False, server_default=sa.false()))
        batch_op.create_index(batch_op.f('ix_access_tokens_project_id'), ['project_id'], unique=False)
        batch_op.create_foreign_key(batch_op.f('fk_access_tokens_project_id_projects'), 'projects',
                                    ['project_id'], ['id'], ondelete='CASCADE')


def downgrade() -> None:
    with op.batch_alter_table('access_tokens', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('fk_access_tokens_project_id_projects'), type_='foreignkey')
        batch_op.drop_index(batch_op.f('ix_access_tokens_project_id'))
        batch_op.drop_column('read_only')
        batch_op.drop_column('project_id')
    op.drop_table('ssh_host_keys')
    op.drop_index(op.f('ix_repo_redirects_repo_id'), table_name='repo_redirects')
    op.drop_table('repo_redirects')
    op.drop_index(op.f('ix_ref_updates_repo_id'), table_name='ref_updates')
    op.drop_table('ref_updates')
    op.drop_index('uq_repos_project_name_live', table_name='repos')
    op.drop_index(op.f('ix_repos_deleted_at'), table_name='repos')
    op.drop_index(op.f('ix_repos_project_id'), table_name='repos')
    op.drop_index(op.f('ix_repos_org_id'), table_name='repos')
    op.drop_table('repos')
