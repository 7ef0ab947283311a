"""The kinds of job of the email area, declared in its manifest (`job_kinds`); their values are
stored in the jobs' rows and never change."""

from __future__ import annotations

from enum import StrEnum


class EmailJob(StrEnum):
    # The cycle that deletes log rows (and their raw messages) older than the plan's keepDays.
    prune_cycle = "email.prune_cycle"
