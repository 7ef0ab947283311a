"""The end-user auth area, the control side: a project's grant (its users in its own database,
schema svc_auth), its providers' OAuth apps and its sign-in settings (docs/auth.md). Named
app_auth: svc.auth is svc's own callers' auth."""

from __future__ import annotations

from pathlib import Path

from svc.domains.app_auth import edge_router, jobs, kinds, pages, router, service
from svc.domains.app_auth.edge_settings import AuthSigninSettings
from svc.manifest import Area, NavLink, ProjectResource
from svc.web.dashboard import Place

AREA = Area(
    name="app_auth",
    routers=(router.router, edge_router.router),
    settings=AuthSigninSettings,
    pages=(pages.router,),
    templates=Path(__file__).parent / "templates",
    nav=(NavLink(Place.project, "Auth", "/auth", order=36),),
    resource=ProjectResource(name="auth", binding="auth system worker",
                             what="sign-in for the site's own users (GitHub, Google, Microsoft)",
                             granted=service.has_grant, command="svc auth grant --project {project}", tab="/auth",
                             button="Grant auth", off=service.unavailable),
    jobs=jobs.register, job_kinds=kinds.AuthJob,
    hints={"database_required": "Create the project's database first (its Database tab, or svc db create), then "
                                "grant auth.",
           "invalid_provider": "The providers are github, google and microsoft; set both the client id and the "
                               "client secret of the OAuth app the project registered there."},
)
