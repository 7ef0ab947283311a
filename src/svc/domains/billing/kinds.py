"""The kinds of job of the billing area, declared in its manifest (`job_kinds`); their values are
stored in the jobs' rows and never change."""

from __future__ import annotations

from enum import StrEnum


class BillingJob(StrEnum):
    # Billing (domains/billing/jobs.py): the daily cycle that compares every paying org with the
    # provider, and one org's comparison ({"org_id"}), which repairs a missed webhook.
    reconcile_cycle = "billing.reconcile_cycle"
    reconcile = "billing.reconcile"
