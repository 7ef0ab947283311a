"""The kinds of job of the dns area, declared in its manifest (`job_kinds`); their values are
stored in the jobs' rows and never change."""

from __future__ import annotations

from enum import StrEnum


class DnsJob(StrEnum):
    # Converge one zone at the nameserver to the store (domains/dns/jobs.py).
    sync = "dns.sync"
    # The periodic cycle that finds zones drifted at the nameserver and enqueues their sync.
    reconcile = "dns.reconcile"
    # Whether the public DNS delegates a zone to svc's nameservers (domains/dns/delegation.py): the
    # periodic cycle re-checks the zones checked longest ago; a new zone enqueues one for itself.
    delegation = "dns.delegation"
    # A bought domain's DS at the registrar (domains/dns/registrar_ds.py): sent when DNSSEC is turned
    # on, removed (before the zone is unsigned) when it is turned off; enqueued with the switch.
    registrar_ds = "dns.registrar_ds"
