"""The kinds of job of the email area, declared in its manifest (`job_kinds`); their values are
stored in the jobs' rows and never change."""

from __future__ import annotations

from enum import StrEnum


class EmailJob(StrEnum):
    # The cycle that deletes log rows (and their raw messages) older than the plan's keepDays.
    prune_cycle = "email.prune_cycle"
    # A sent message to the relay ({"mail_id"}), retried with backoff (outbound.py).
    send = "email.send"
    # A received message to the project's worker's email() handler ({"mail_id"}), when one is live.
    to_worker = "email.to_worker"
    # The cycle that publishes the mail domain's DNS records in svc's zone holding it, and repairs them.
    records_cycle = "email.records_cycle"
