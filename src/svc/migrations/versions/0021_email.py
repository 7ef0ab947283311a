"""email: per-project grants, the mail log, suppressions, the mail domains' DKIM keys

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-29 14:40:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa
import svc.models.base


revision = '0021'
down_revision = '0020'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('mail_domain_keys',
    sa.Column('domain', sa.String(length=253), nullable=False),
    sa.Column('selector', sa.String(length=63), nullable=False),
    sa.Column('sealed_key', sa.LargeBinary(), nullable=False),
    sa.Column('public_key', sa.Text(), nullable=False),
    sa.Column('created_at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('domain', name=op.f('pk_mail_domain_keys'))
    )
    op.create_table('email_grants',
    sa.Column('project_id', sa.String(length=40), nullable=False),
    sa.Column('org_id', sa.String(length=40), nullable=False),
    sa.Column('address', sa.String(length=253), nullable=False),
    sa.Column('granted_at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('granted_by', sa.String(length=40), nullable=True),
    sa.ForeignKeyConstraint(['granted_by'], ['users.id'], name=op.f('fk_email_grants_granted_by_users'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['org_id'], ['orgs.id'], name=op.f('fk_email_grants_org_id_orgs'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['project_id'], ['projects.id'], name=op.f('fk_email_grants_project_id_projects'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('project_id', name=op.f('pk_email_grants')),
    sa.UniqueConstraint('address', name=op.f('uq_email_grants_address'))
    )
    with op.batch_alter_table('email_grants', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_email_grants_org_id'), ['org_id'], unique=False)

    op.create_table('mail_log',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('project_id', sa.String(length=40), nullable=False),
    sa.Column('org_id', sa.String(length=40), nullable=False),
    sa.Column('direction', sa.String(length=3), nullable=False),
    sa.Column('from_addr', sa.String(length=320), nullable=False),
    sa.Column('to_addr', sa.String(length=2000), nullable=False),
    sa.Column('subject', sa.String(length=400), nullable=False),
    sa.Column('outcome', sa.String(length=20), nullable=False),
    sa.Column('size', sa.Integer(), nullable=False),
    sa.Column('spf', sa.String(length=10), nullable=True),
    sa.Column('raw_key', sa.String(length=200), nullable=True),
    sa.Column('message_id', sa.String(length=400), nullable=True),
    sa.Column('provider_id', sa.String(length=400), nullable=True),
    sa.Column('detail', sa.Text(), nullable=True),
    sa.Column('dedupe_key', sa.String(length=64), nullable=True),
    sa.Column('client_ip', sa.String(length=45), nullable=True),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('created_at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['org_id'], ['orgs.id'], name=op.f('fk_mail_log_org_id_orgs'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['project_id'], ['projects.id'], name=op.f('fk_mail_log_project_id_projects'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_mail_log'))
    )
    with op.batch_alter_table('mail_log', schema=None) as batch_op:
        batch_op.create_index('ix_mail_log_message_id', ['message_id'], unique=False)
        batch_op.create_index('ix_mail_log_provider_id', ['provider_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_mail_log_org_id'), ['org_id'], unique=False)
        batch_op.create_index('ix_mail_log_project_created', ['project_id', 'created_at', 'id'], unique=False)
        batch_op.create_index('ux_mail_log_project_dedupe', ['project_id', 'dedupe_key'], unique=True)

    op.create_table('mail_suppressions',
    sa.Column('project_id', sa.String(length=40), nullable=False),
    sa.Column('recipient', sa.String(length=320), nullable=False),
    sa.Column('reason', sa.String(length=20), nullable=False),
    sa.Column('mail_id', sa.String(length=40), nullable=True),
    sa.Column('created_at', svc.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['project_id'], ['projects.id'], name=op.f('fk_mail_suppressions_project_id_projects'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('project_id', 'recipient', name=op.f('pk_mail_suppressions'))
    )


def downgrade() -> None:
    op.drop_table('mail_suppressions')
    with op.batch_alter_table('mail_log', schema=None) as batch_op:
        batch_op.drop_index('ux_mail_log_project_dedupe')
        batch_op.drop_index('ix_mail_log_project_created')
        batch_op.drop_index(batch_op.f('ix_mail_log_org_id'))
        batch_op.drop_index('ix_mail_log_message_id')
        batch_op.drop_index('ix_mail_log_provider_id')

    op.drop_table('mail_log')
    with op.batch_alter_table('email_grants', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_email_grants_org_id'))

    op.drop_table('email_grants')
    op.drop_table('mail_domain_keys')
