"""SQLAlchemy models, one file per table group. Import no domain."""

from svc.models.audit import AuditEvent
from svc.models.base import Base
from svc.models.invites import Invite
from svc.models.jobs import Cycle, Job
from svc.models.mail import OutboundMail
from svc.models.notifications import Notification
from svc.models.orgs import Membership, Org, PersonalOrg
from svc.models.projects import AccessGrant, Deployment, EdgeState, Hostname, Operation, Project, Secret
from svc.models.users import AccessToken, LoginState, SSHKey, User, UserSession

__all__ = [
    "AccessGrant", "AccessToken", "AuditEvent", "Base", "Cycle", "Deployment", "EdgeState", "Hostname",
    "Invite", "Job", "LoginState", "Membership", "Notification", "Operation", "Org", "OutboundMail",
    "PersonalOrg", "Project", "SSHKey", "Secret", "User", "UserSession",
]
