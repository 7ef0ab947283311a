"""Every state and kind the store keeps, as the string it keeps. Columns hold these values;
code compares against these names, never against bare strings."""

from __future__ import annotations

from enum import StrEnum


class Role(StrEnum):
    """An org role: viewer < member < admin (auth/roles.py enforces them)."""

    viewer = "viewer"
    member = "member"
    admin = "admin"


class Plan(StrEnum):
    free = "free"
    pro = "pro"


class InviteState(StrEnum):
    pending = "pending"
    used = "used"
    revoked = "revoked"
    # Never stored: a pending invite past its expiresAt reads as expired.
    expired = "expired"


class ProjectState(StrEnum):
    active = "active"
    # Teardown in progress: not routed, readable, not changeable.
    deleting = "deleting"


class AccessMode(StrEnum):
    """A project's access policy. A project that never set one is public."""

    public = "public"
    org = "org"
    password = "password"


# The modes in which the edge asks svc before serving a request.
PROTECTED_ACCESS_MODES = frozenset({AccessMode.org, AccessMode.password})


class HostnameKind(StrEnum):
    default = "default"
    custom = "custom"


class HostnameStatus(StrEnum):
    pending_dns = "pending_dns"
    active = "active"


class DomainStatus(StrEnum):
    """A domain (decisions.md): a purchase walks the first four in order; expired and
    transferred_out come from the registrar (a sync)."""

    pending_payment = "pending_payment"
    registering = "registering"
    setting_ns = "setting_ns"
    active = "active"
    expired = "expired"
    transferred_out = "transferred_out"


class DomainSource(StrEnum):
    purchase = "purchase"
    imported = "import"


class OperationKind(StrEnum):
    teardown = "teardown"
    # A project's database (domains/databases/operations.py).
    restore = "restore"
    delete = "delete"
    backup = "backup"  # back up now: a generation taken on request, then proven restorable


class DatabaseOpPhase(StrEnum):
    """A database restore's or delete's phases, in order (the spec's table): restore runs them
    all; delete has no reactivation (its committing removes the database). A backup taken on
    request (svc's extension) is dumping, verifying, done."""

    draining = "draining"
    sealing = "sealing"
    committing = "committing"
    reactivation = "reactivation"
    dumping = "dumping"
    verifying = "verifying"
    done = "done"


class GenerationKind(StrEnum):
    """Why a generation of a project's database was taken."""

    scheduled = "scheduled"  # the hourly cycle saw a change
    manual = "manual"  # back up now (POST generations): asked for, then proven like the others
    pre_restore = "pre_restore"  # a restore's sealing: what the restore replaced
    final = "final"  # a delete's sealing: kept and listed after the database is gone, never pruned
    export = "export"  # a diagnostic image (POST export): never listed, selected or pruned


class TeardownPhase(StrEnum):
    """A project teardown's phases, in order (domains/operations/jobs.py)."""

    routing = "routing"
    files = "files"
    grants = "grants"
    # The project's database: a final generation kept, then the database dropped (databases area).
    database = "database"
    metadata = "metadata"
    done = "done"


class TerminalCode(StrEnum):
    ok = "ok"
    aborted = "aborted"
    failed = "failed"


class JobStatus(StrEnum):
    queued = "queued"
    running = "running"
    done = "done"
    failed = "failed"


class CertificateStatus(StrEnum):
    issuing = "issuing"
    active = "active"
    failed = "failed"


class CertificateKind(StrEnum):
    wildcard = "wildcard"  # *.<SVC_APP_DOMAIN>, by DNS-01 on svc's own nameserver
    host = "host"  # an active custom hostname, by HTTP-01 at the edge
    console = "console"  # SVC_PUBLIC_URL's host (the edge fronts the dashboard there), by HTTP-01
    default = "default"  # a project's default hostname, its own from svc's local CA (app domain localhost)


class DnssecState(StrEnum):
    """A zone's DNSSEC state (the spec's state table). `active`: the parent serves the DS, reached
    by a domain bought through svc, whose DS svc sends the registrar itself (RegistrarDs)."""

    off = "off"
    signing = "signing"
    ds_pending = "ds_pending"
    active = "active"


class RegistrarDs(StrEnum):
    """The DS of a zone whose domain svc bought, at the registrar (None on the zone: a domain
    registered elsewhere, whose owner registers the DS). docs/dns.md "DNSSEC"."""

    none = "none"  # no DS at the registrar (DNSSEC off)
    sending = "sending"  # DNSSEC on: the job sends the nameserver's DS to the registrar
    sent = "sent"  # the registrar holds them; the parent does not serve them yet
    published = "published"  # the parent serves them (the delegation check saw them): DNSSEC active
    removing = "removing"  # DNSSEC off: the job removes them at the registrar; the zone stays signed
    withdrawn = "withdrawn"  # removed at the registrar; signed until the parent stops serving them


class ManagedBy(StrEnum):
    """Who owns an rrset that users may not change (rrsets.managed_by); null: the user's own."""

    # The SOA and the apex NS of every zone.
    system = "system"
    # A custom hostname's CNAME to the fallback origin in the org's own zone (domains/dns/links.py).
    project = "project"
    # The mail domain's MX, SPF, DKIM and DMARC records, in the zone holding it (domains/email/records.py).
    mail = "mail"


class RepoVisibility(StrEnum):
    private = "private"
    # Clones and fetches without credentials; pushes still need a member's credential.
    public = "public"


class MailDirection(StrEnum):
    inbound = "in"  # received by svc's SMTP server for a granted address
    outbound = "out"  # sent by the project (env.email or the API) through the relay


class MailOutcome(StrEnum):
    """Where one message of the mail log stands."""

    received = "received"  # accepted and stored (inbound)
    handled = "handled"  # the project's worker took it (its email() handler returned)
    worker_rejected = "worker_rejected"  # the worker's handler called message.setReject()
    queued = "queued"  # outbound, waiting for the relay (the mail.send job)
    sent = "sent"  # the relay accepted it
    delivered = "delivered"  # the provider reported delivery
    bounced = "bounced"  # the provider reported a bounce
    complained = "complained"  # the recipient marked it as spam
    failed = "failed"  # the relay refused it for good, or attempts ran out
    suppressed = "suppressed"  # not sent: the recipient bounced or complained before


class SpfResult(StrEnum):
    """RFC 7208's results, as Authentication-Results spells them."""

    pass_ = "pass"
    fail = "fail"
    softfail = "softfail"
    neutral = "neutral"
    none = "none"
    temperror = "temperror"
    permerror = "permerror"


class AuthProviderName(StrEnum):
    """The social identity providers a project's end users may sign in with (decisions.md)."""

    github = "github"
    google = "google"
    microsoft = "microsoft"
