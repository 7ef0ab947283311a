"""certificates: the ACME account, certificates (keys sealed), HTTP-01 challenge answers

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26 14:20:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa
import svc.models.base


revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'acme_accounts',
        sa.Column('directory_url', sa.String(length=500), nullable=False),
        sa.Column('sealed_key', sa.LargeBinary(), nullable=False),
        sa.Column('created_at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('directory_url', name=op.f('pk_acme_accounts')),
    )
    op.create_table(
        'certificates',
        sa.Column('name', sa.String(length=253), nullable=False),
        sa.Column('kind', sa.String(length=16), nullable=False),
        sa.Column('status', sa.String(length=16), nullable=False),
        sa.Column('fullchain', sa.Text(), nullable=True),
        sa.Column('sealed_key', sa.LargeBinary(), nullable=True),
        sa.Column('not_before', svc.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column('not_after', svc.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column('issuer', sa.String(length=200), nullable=True),
        sa.Column('last_error', sa.String(length=1000), nullable=True),
        sa.Column('renew_at', svc.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column('failures', sa.Integer(), nullable=False),
        sa.Column('created_at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column('updated_at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('name', name=op.f('pk_certificates')),
    )
    op.create_index(op.f('ix_certificates_renew_at'), 'certificates', ['renew_at'], unique=False)
    op.create_table(
        'acme_challenges',
        sa.Column('token', sa.String(length=200), nullable=False),
        sa.Column('host', sa.String(length=253), nullable=False),
        sa.Column('key_authorization', sa.Text(), nullable=False),
        sa.Column('created_at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('token', name=op.f('pk_acme_challenges')),
    )


def downgrade() -> None:
    op.drop_table('acme_challenges')
    op.drop_index(op.f('ix_certificates_renew_at'), table_name='certificates')
    op.drop_table('certificates')
    op.drop_table('acme_accounts')
