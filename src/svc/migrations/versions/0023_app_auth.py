"""app_auth: end-user auth per project (the grant with its settings, the providers' OAuth apps)

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-29 19:00:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa
import svc.models.base


revision = '0023'
down_revision = '0022'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('auth_grants',
    sa.Column('project_id', sa.String(length=40), nullable=False),
    sa.Column('session_days', sa.Integer(), nullable=False),
    sa.Column('brand_name', sa.String(length=100), nullable=True),
    sa.Column('brand_color', sa.String(length=7), nullable=True),
    sa.Column('logo_url', sa.String(length=2048), nullable=True),
    sa.Column('schema_version', sa.Integer(), nullable=False),
    sa.Column('created_at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('granted_by', sa.String(length=40), nullable=True),
    sa.Column('revoked_at', svc.models.base.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['granted_by'], ['users.id'], name=op.f('fk_auth_grants_granted_by_users'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['project_id'], ['projects.id'], name=op.f('fk_auth_grants_project_id_projects'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('project_id', name=op.f('pk_auth_grants'))
    )
    op.create_table('auth_providers',
    sa.Column('project_id', sa.String(length=40), nullable=False),
    sa.Column('name', sa.String(length=16), nullable=False),
    sa.Column('client_id', sa.String(length=500), nullable=False),
    sa.Column('sealed_secret', sa.LargeBinary(), nullable=False),
    sa.Column('updated_at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['project_id'], ['projects.id'], name=op.f('fk_auth_providers_project_id_projects'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('project_id', 'name', name=op.f('pk_auth_providers'))
    )


def downgrade() -> None:
    op.drop_table('auth_providers')
    op.drop_table('auth_grants')
