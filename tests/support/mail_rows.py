"""Rows of a project's mail log (and a raw message) written straight into a running `svc serve`'s
SQLite store and blob files, as inbound and outbound mail write them: the CLI's and the dashboard's
tests of the log."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy import create_engine, select
from sqlalchemy.orm import Session

from svc.domains.email.service import raw_key
from svc.kit.clock import utcnow
from svc.kit.ids import new_id
from svc.models import MailLogEntry, Org, Project


def add_mail(data_dir: Path, org: str, project: str, n: int, *, domain: str, start: datetime | None = None,
             raw: bytes | None = None) -> list[str]:
    """n messages in the project's log, alternating in (received, SPF pass) and out (sent), a second
    apart from `start` (ten minutes ago), oldest first; the first with `raw` as its raw copy in the
    blob store (files under the data directory). Their ids, oldest first."""
    engine = create_engine(f"sqlite:///{data_dir / 'svc.sqlite3'}")
    start = start or utcnow() - timedelta(minutes=10)
    address = f"{project}.{org}.{domain}"
    ids = []
    try:
        with Session(engine) as s, s.begin():
            row = s.scalars(select(Project).join(Org, Org.id == Project.org_id)
                            .where(Org.slug == org, Project.name == project)).one()
            for i in range(n):
                mail_id = new_id("mail")
                key = None
                if raw is not None and i == 0:
                    key = raw_key(row.id, mail_id)
                    blob = data_dir / "blobs" / key
                    blob.parent.mkdir(parents=True, exist_ok=True)
                    blob.write_bytes(raw)
                inbound = i % 2 == 0
                at = start + timedelta(seconds=i)
                s.add(MailLogEntry(
                    id=mail_id, project_id=row.id, org_id=row.org_id, direction="in" if inbound else "out",
                    from_addr="ann@example.com" if inbound else f"noreply@{address}",
                    to_addr=f"hi@{address}" if inbound else "ann@example.com",
                    subject=f"message {i}", outcome="received" if inbound else "sent",
                    size=len(raw) if key and raw else 100, spf="pass" if inbound else None, raw_key=key,
                    created_at=at, updated_at=at))
                ids.append(mail_id)
    finally:
        engine.dispose()
    return ids
