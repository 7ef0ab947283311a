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
