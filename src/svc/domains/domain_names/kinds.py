"""The kinds of job of the domain_names area, declared in its manifest (`job_kinds`); their values are
stored in the jobs' rows and never change."""

from __future__ import annotations

from enum import StrEnum


class DomainJob(StrEnum):
    # The registrar's view of every domain, read back (expiry, lock, NS; gone: transferred_out),
    # and the notice 30 days before an expiry that auto-renew will not cover.
    sync_cycle = "domains.sync_cycle"
