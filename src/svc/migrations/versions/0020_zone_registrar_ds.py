"""dns: where a bought domain's DS stands at the registrar (svc sends it itself)

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-29 11:30:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa


revision = '0020'
down_revision = '0019'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('dns_zones') as batch:
        batch.add_column(sa.Column('registrar_ds', sa.String(length=16), nullable=True))
    # The zones of domains bought through svc: their DS is svc's to send (none sent yet: a zone
    # already signed gets its DS sent when DNSSEC is turned off and on again).
    op.execute("UPDATE dns_zones SET registrar_ds = 'none' WHERE name IN "
               "(SELECT name || '.' FROM domains WHERE source = 'purchase' AND status != 'transferred_out')")


def downgrade() -> None:
    with op.batch_alter_table('dns_zones') as batch:
        batch.drop_column('registrar_ds')
