"""The kinds of job of the hostnames area, declared in its manifest (`job_kinds`); their values are
stored in the jobs' rows and never change."""

from __future__ import annotations

from enum import StrEnum


class HostnameJob(StrEnum):
    # Ownership check of custom hostnames (domains/hostnames/jobs.py): the periodic cycle checks
    # every pending one (empty payload); an add enqueues one for its row ({"host": ...}).
    verify = "hostname.verify"
