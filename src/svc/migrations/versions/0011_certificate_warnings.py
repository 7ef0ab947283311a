"""certificates: when the org was told a failing certificate is about to expire; OCSP answers to staple

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-26 16:00:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa
import svc.models.base


revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('certificates') as batch:
        batch.add_column(sa.Column('warned_at', svc.models.base.UTCDateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column('ocsp_response', sa.LargeBinary(), nullable=True))
        batch.add_column(sa.Column('ocsp_valid_until', svc.models.base.UTCDateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column('ocsp_refresh_at', svc.models.base.UTCDateTime(timezone=True), nullable=True))
        batch.create_index(batch.f('ix_certificates_ocsp_refresh_at'), ['ocsp_refresh_at'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('certificates') as batch:
        batch.drop_index(batch.f('ix_certificates_ocsp_refresh_at'))
        for column in ('ocsp_refresh_at', 'ocsp_valid_until', 'ocsp_response', 'warned_at'):
            batch.drop_column(column)
