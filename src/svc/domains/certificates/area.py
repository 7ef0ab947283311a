"""The certificates area: what TLS certificates svc holds and gets over ACME (docs/tls.md)."""

from __future__ import annotations

from svc.domains.certificates import jobs
from svc.manifest import Area

AREA = Area(name="certificates", jobs=jobs.register)
