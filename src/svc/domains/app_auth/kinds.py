"""The kinds of job of the end-user auth area, declared in its manifest (`job_kinds`); their values
are stored in the jobs' rows and never change."""

from __future__ import annotations

from enum import StrEnum


class AuthJob(StrEnum):
    # The cycle that brings every granted project's svc_auth schema to svc's latest version (a new
    # svc with a new version migrates the projects granted before it).
    schema_cycle = "auth.schema_cycle"
