"""The kinds of job of the databases area, declared in its manifest (`job_kinds`); their values are
stored in the jobs' rows and never change."""

from __future__ import annotations

from enum import StrEnum


class DatabaseJob(StrEnum):
    # Projects' databases (domains/databases/jobs.py): the hourly cycle of change checks (and
    # retention), a generation of one database ({"project_id", "kind"}), the verification of one
    # generation by a scratch restore ({"generation_id"}), a restore's or delete's next phase
    # ({"operation_id"}).
    cycle = "database.cycle"
    generation = "database.generation"
    verify = "database.verify"
    operation = "database.operation"
    watchdog = "database.watchdog"
