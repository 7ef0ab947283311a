"""The operations area: long work on a project that outlives its request (teardown), step by step."""

from __future__ import annotations

from svc.domains.operations import jobs, kinds, router
from svc.manifest import Area

AREA = Area(name="operations", routers=(router.router,), jobs=jobs.register, job_kinds=kinds.OperationJob)
