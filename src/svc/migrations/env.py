"""Alembic environment: runs on the connection svc.db.migrate hands over (SQLite or PostgreSQL)."""

from __future__ import annotations

from alembic import context

from svc.models import Base

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through `svc migrate` (svc.db.migrate), which supplies the connection")

context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
