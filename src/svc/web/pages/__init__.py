"""The dashboard's pages, one module per area, each with its `router` (web/routing.py page_router).
A new area adds its module here (docs/architecture.md, "How to add a dashboard page")."""
