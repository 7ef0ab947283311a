"""The kinds of job of the workers area, declared in its manifest (`job_kinds`); their values are
stored in the jobs' rows and never change."""

from __future__ import annotations

from enum import StrEnum


class WorkerJob(StrEnum):
    # The periodic cycle that drops the projects' log lines older than their retention (workers).
    logs_expire = "logs.expire"
