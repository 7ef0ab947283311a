"""SQLAlchemy models, one file per table group. Import no domain."""

from svc.models.ai import AICredit, AIGrant, AILedgerEntry, AIModelOverrun, AIReservation, AIUsage
from svc.models.app_auth import AuthGrant, AuthProvider
from svc.models.audit import AuditEvent
from svc.models.base import Base
from svc.models.billing import BillingAccount, BillingEvent
from svc.models.certificates import AcmeAccount, AcmeChallenge, Certificate
from svc.models.databases import DatabaseGeneration, DatabaseToken, ProjectDatabase
from svc.models.dns import PendingChange, RRset, Zone
from svc.models.domain_names import Domain, DomainEvent, DomainRenewal
from svc.models.email import EmailGrant, MailDomainKey, MailLogEntry, MailSuppression
from svc.models.invites import Invite
from svc.models.jobs import Cycle, Job
from svc.models.mail import OutboundMail
from svc.models.notifications import Notification
from svc.models.orgs import Membership, Org, PersonalOrg
from svc.models.projects import AccessGrant, Deployment, EdgeState, Hostname, Operation, Project, Secret
from svc.models.ratelimits import RateCounter
from svc.models.repos import RefUpdate, Repo, RepoRedirect, SshHostKey
from svc.models.states import (
    PROTECTED_ACCESS_MODES,
    AccessMode,
    AuthProviderName,
    CertificateKind,
    CertificateStatus,
    DatabaseOpPhase,
    DnssecState,
    DomainSource,
    DomainStatus,
    GenerationKind,
    HostnameKind,
    HostnameStatus,
    InviteState,
    JobStatus,
    MailDirection,
    MailOutcome,
    ManagedBy,
    OperationKind,
    Plan,
    ProjectState,
    RegistrarDs,
    RepoVisibility,
    Role,
    SpfResult,
    TeardownPhase,
    TerminalCode,
)
from svc.models.storage import StorageGrant, StorageReservation
from svc.models.users import AccessToken, LoginState, SSHKey, User, UserSession
from svc.models.workers import LogLine, TrafficMinute

__all__ = [
    "PROTECTED_ACCESS_MODES",
    "AICredit",
    "AIGrant",
    "AILedgerEntry",
    "AIModelOverrun",
    "AIReservation",
    "AIUsage",
    "AccessGrant",
    "AccessMode",
    "AccessToken",
    "AcmeAccount",
    "AcmeChallenge",
    "AuditEvent",
    "AuthGrant",
    "AuthProvider",
    "AuthProviderName",
    "Base",
    "BillingAccount",
    "BillingEvent",
    "Certificate",
    "CertificateKind",
    "CertificateStatus",
    "Cycle",
    "DatabaseGeneration",
    "DatabaseOpPhase",
    "DatabaseToken",
    "Deployment",
    "DnssecState",
    "Domain",
    "DomainEvent",
    "DomainRenewal",
    "DomainSource",
    "DomainStatus",
    "EdgeState",
    "EmailGrant",
    "GenerationKind",
    "Hostname",
    "HostnameKind",
    "HostnameStatus",
    "Invite",
    "InviteState",
    "Job",
    "JobStatus",
    "LogLine",
    "LoginState",
    "MailDirection",
    "MailDomainKey",
    "MailLogEntry",
    "MailOutcome",
    "MailSuppression",
    "ManagedBy",
    "Membership",
    "Notification",
    "Operation",
    "OperationKind",
    "Org",
    "OutboundMail",
    "PendingChange",
    "PersonalOrg",
    "Plan",
    "Project",
    "ProjectDatabase",
    "ProjectState",
    "RRset",
    "RateCounter",
    "RefUpdate",
    "RegistrarDs",
    "Repo",
    "RepoRedirect",
    "RepoVisibility",
    "Role",
    "SSHKey",
    "Secret",
    "SpfResult",
    "SshHostKey",
    "StorageGrant",
    "StorageReservation",
    "TeardownPhase",
    "TerminalCode",
    "TrafficMinute",
    "User",
    "UserSession",
    "Zone",
]
