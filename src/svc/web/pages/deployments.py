"""(to be written)"""

from __future__ import annotations

from svc.web.routing import page_router

router = page_router()
