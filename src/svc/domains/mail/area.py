"""The mail area: outgoing mail, queued with the change that needs it and sent by a job."""

from __future__ import annotations

from svc.domains.mail import jobs, kinds
from svc.manifest import Area

AREA = Area(name="mail", jobs=jobs.register, job_kinds=kinds.MailJob)
