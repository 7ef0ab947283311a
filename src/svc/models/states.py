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


class DatabaseOpPhase(StrEnum):
    """A database restore's or delete's phases, in order (the spec's table): restore runs them
    all; delete has no reactivation (its committing removes the database)."""

    draining = "draining"
    sealing = "sealing"
    committing = "committing"
    reactivation = "reactivation"
    done = "done"


class GenerationKind(StrEnum):
    """Why a generation of a project's database was taken."""

    scheduled = "scheduled"  # the hourly cycle saw a change
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


class JobKind(StrEnum):
    """Every kind of job on the outbox; each area registers the handlers of its own kinds."""

    mail_send = "mail.send"
    project_teardown = "project.teardown"
    artifact_collect = "artifact.collect"
    # Converge one zone at the nameserver to the store (domains/dns/jobs.py).
    dns_sync = "dns.sync"
    # The periodic cycle that finds zones drifted at the nameserver and enqueues their sync.
    dns_reconcile = "dns.reconcile"
    # Ownership check of custom hostnames (domains/hostnames/jobs.py): the periodic cycle checks
    # every pending one (empty payload); an add enqueues one for its row ({"host": ...}).
    hostname_verify = "hostname.verify"
    # Whether the public DNS delegates a zone to svc's nameservers (domains/dns/delegation.py): the
    # periodic cycle re-checks the zones checked longest ago; a new zone enqueues one for itself.
    dns_delegation = "dns.delegation"
    # The periodic cycle that drops the projects' log lines older than their retention (workers).
    logs_expire = "logs.expire"
    # Projects' databases (domains/databases/jobs.py): the hourly cycle of change checks (and
    # retention), a generation of one database ({"project_id", "kind"}), the verification of one
    # generation by a scratch restore ({"generation_id"}), a restore's or delete's next phase
    # ({"operation_id"}).
    database_cycle = "database.cycle"
    database_generation = "database.generation"
    database_verify = "database.verify"
    database_operation = "database.operation"
    database_watchdog = "database.watchdog"
    # Certificates (domains/certificates/jobs.py): the cycle that asks for the certificates svc
    # should hold and renews the due ones; one order ({"name"}).
    certificate_cycle = "certificate.cycle"
    certificate_issue = "certificate.issue"
    certificate_ocsp = "certificate.ocsp"  # an OCSP answer to staple, asked of the issuer's responder
    # Billing (domains/billing/jobs.py): the daily cycle that compares every paying org with the
    # provider, and one org's comparison ({"org_id"}), which repairs a missed webhook.
    billing_reconcile_cycle = "billing.reconcile_cycle"
    billing_reconcile = "billing.reconcile"
    # AI (domains/ai/jobs.py): an org's auto top-up, charged through the billing provider
    # ({"org_id"}); the cycle that lets go the holds of calls a crash left in flight.
    ai_autotopup = "ai.autotopup"
    ai_release_cycle = "ai.release_cycle"
    # The paid orders of AI credit of the orgs waiting for one (a checkout, a charge under way),
    # each credited whose order.paid was lost; one org's ({"org_id"}).
    ai_orders_cycle = "ai.orders_cycle"
    ai_orders = "ai.orders"
    # The registrar's view of every domain, read back (expiry, lock, NS; gone: transferred_out),
    # and the notice 30 days before an expiry that auto-renew will not cover.
    domains_sync_cycle = "domains.sync_cycle"
    # Repositories (domains/repos/jobs.py): the cycle that removes the disk copy of repositories
    # deleted longer ago than the retention period.
    repos_purge_cycle = "repos.purge_cycle"


class CertificateStatus(StrEnum):
    issuing = "issuing"
    active = "active"
    failed = "failed"


class CertificateKind(StrEnum):
    wildcard = "wildcard"  # *.<SVC_APP_DOMAIN>, by DNS-01 on svc's own nameserver
    host = "host"  # an active custom hostname, by HTTP-01 at the edge
    console = "console"  # SVC_PUBLIC_URL's host (the edge fronts the dashboard there), by HTTP-01


class DnssecState(StrEnum):
    """A zone's DNSSEC state (the spec's state table). `active` (the parent serves the DS) is
    named by the contract but not reached yet: nothing checks the parent zone."""

    off = "off"
    signing = "signing"
    ds_pending = "ds_pending"
    active = "active"


class ManagedBy(StrEnum):
    """Who owns an rrset that users may not change (rrsets.managed_by); null: the user's own."""

    # The SOA and the apex NS of every zone.
    system = "system"
    # A custom hostname's CNAME to the fallback origin in the org's own zone (domains/dns/links.py).
    project = "project"


class RepoVisibility(StrEnum):
    private = "private"
    # Clones and fetches without credentials; pushes still need a member's credential.
    public = "public"
