"""Every area of svc, one line each, in the order their routes and pages are mounted: svc.app and
svc.web loop over this list (each area's manifest is its domains/<area>/area.py)."""

from __future__ import annotations

from svc.domains.access.area import AREA as access
from svc.domains.ai.area import AREA as ai
from svc.domains.app_auth.area import AREA as app_auth
from svc.domains.audit.area import AREA as audit
from svc.domains.billing.area import AREA as billing
from svc.domains.certificates.area import AREA as certificates
from svc.domains.credentials.area import AREA as credentials
from svc.domains.databases.area import AREA as databases
from svc.domains.deployments.area import AREA as deployments
from svc.domains.dns.area import AREA as dns
from svc.domains.domain_names.area import AREA as domains
from svc.domains.email.area import AREA as email
from svc.domains.hostnames.area import AREA as hostnames
from svc.domains.identity.area import AREA as identity
from svc.domains.invites.area import AREA as invites
from svc.domains.mail.area import AREA as mail
from svc.domains.notifications.area import AREA as notifications
from svc.domains.operations.area import AREA as operations
from svc.domains.orgs.area import AREA as orgs
from svc.domains.projects.area import AREA as projects
from svc.domains.ratelimits.area import AREA as ratelimits
from svc.domains.repos.area import AREA as repos
from svc.domains.secrets.area import AREA as secrets
from svc.domains.storage.area import AREA as storage
from svc.domains.workers.area import AREA as workers
from svc.manifest import Area

AREAS: tuple[Area, ...] = (
    identity, orgs, notifications, credentials, invites, projects, operations, deployments, secrets, access,
    audit, dns, hostnames, mail, ratelimits, workers,
    databases, certificates, billing, ai, domains, repos, email, storage, app_auth,
)
