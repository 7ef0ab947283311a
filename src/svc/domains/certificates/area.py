"""The certificates area: what TLS certificates svc holds and gets over ACME (docs/tls.md)."""

from __future__ import annotations

from svc.domains.certificates import admin, edge_router, jobs, kinds
from svc.domains.certificates.settings import CertificateSettings
from svc.manifest import Area

AREA = Area(name="certificates", routers=(edge_router.router,), jobs=jobs.register, job_kinds=kinds.CertificateJob,
            settings=CertificateSettings, admin=admin.commands)
