"""The kinds of job of the ai area, declared in its manifest (`job_kinds`); their values are
stored in the jobs' rows and never change."""

from __future__ import annotations

from enum import StrEnum


class AIJob(StrEnum):
    # AI (domains/ai/jobs.py): an org's auto top-up, charged through the billing provider
    # ({"org_id"}); the cycle that lets go the holds of calls a crash left in flight.
    autotopup = "ai.autotopup"
    release_cycle = "ai.release_cycle"
    # The paid orders of AI credit of the orgs waiting for one (a checkout, a charge under way),
    # each credited whose order.paid was lost; one org's ({"org_id"}).
    orders_cycle = "ai.orders_cycle"
    orders = "ai.orders"
