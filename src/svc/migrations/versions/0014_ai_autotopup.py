"""ai: the state of an org's auto top-up (today's attempts, the charge under way, why it stopped), and
what each project's calls cost by minute (the gateway's caps read it)

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-26 22:40:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa
import svc.models.base


revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('ai_credits') as batch:
        batch.add_column(sa.Column('autotopup_day', sa.String(length=10), nullable=True))
        batch.add_column(sa.Column('autotopups_on_day', sa.Integer(), nullable=False, server_default='0'))
        batch.add_column(sa.Column('autotopup_charging_since', svc.models.base.UTCDateTime(timezone=True),
                                   nullable=True))
        batch.add_column(sa.Column('autotopup_stopped', sa.String(length=300), nullable=True))
    op.create_table(
        'ai_usage',
        sa.Column('project_id', sa.String(length=40), nullable=False),
        sa.Column('minute', svc.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column('calls', sa.Integer(), nullable=False),
        sa.Column('micro_cents', sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint('project_id', 'minute', name=op.f('pk_ai_usage')),
    )
    op.create_index('ix_ai_ledger_project_id_created_at', 'ai_ledger', ['project_id', 'created_at'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_ai_ledger_project_id_created_at', table_name='ai_ledger')
    op.drop_table('ai_usage')
    with op.batch_alter_table('ai_credits') as batch:
        batch.drop_column('autotopup_stopped')
        batch.drop_column('autotopup_charging_since')
        batch.drop_column('autotopups_on_day')
        batch.drop_column('autotopup_day')
