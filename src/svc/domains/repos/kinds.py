"""The kinds of job of the repos area, declared in its manifest (`job_kinds`); their values are
stored in the jobs' rows and never change."""

from __future__ import annotations

from enum import StrEnum


class RepoJob(StrEnum):
    # Repositories (domains/repos/jobs.py): the cycle that removes the disk copy of repositories
    # deleted longer ago than the retention period.
    purge_cycle = "repos.purge_cycle"
