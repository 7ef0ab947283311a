"""The kinds of job of the operations area, declared in its manifest (`job_kinds`); their values are
stored in the jobs' rows and never change."""

from __future__ import annotations

from enum import StrEnum


class OperationJob(StrEnum):
    project_teardown = "project.teardown"
