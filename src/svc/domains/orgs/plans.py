"""The plans and what each allows: the one table every area with a limit reads (spec "Limits";
decisions.md's defaults). A downgrade keeps all data; a limit applies to new actions only."""

from __future__ import annotations

from dataclasses import dataclass

from svc.models import Plan
from svc.settings import Settings

GIB = 1024**3
# A dollar in micro-cents (AI's money: integers, never floats).
DOLLAR = 100_000_000


@dataclass(frozen=True)
class PlanLimits:
    projects: int
    storage_bytes: int
    mail_per_hour: int
    # An AI call's output tokens at most, and its input tokens; 0: the model decides.
    ai_max_output_tokens: int
    ai_max_input_tokens: int
    # A project's AI calls a minute at most, and what they may cost in a day (micro-cents).
    ai_calls_per_minute: int
    ai_micro_cents_per_day: int
    # What the org's git repositories may hold on disk, deleted ones until they are purged.
    repo_storage_bytes: int


def limits(settings: Settings, plan: str) -> PlanLimits:
    """What `plan` allows on this server (the project counts and the AI calls a minute are settings:
    SVC_FREE_PROJECT_LIMIT, SVC_PRO_PROJECT_LIMIT, SVC_FREE_AI_CALLS_PER_MINUTE, SVC_PRO_AI_CALLS_PER_MINUTE,
    SVC_FREE_REPO_STORAGE_BYTES, SVC_PRO_REPO_STORAGE_BYTES)."""
    if plan == Plan.pro:
        return PlanLimits(projects=settings.pro_project_limit, storage_bytes=100 * GIB, mail_per_hour=2000,
                          ai_max_output_tokens=0, ai_max_input_tokens=0,
                          ai_calls_per_minute=settings.pro_ai_calls_per_minute,
                          ai_micro_cents_per_day=100 * DOLLAR, repo_storage_bytes=settings.pro_repo_storage_bytes)
    return PlanLimits(projects=settings.free_project_limit, storage_bytes=1 * GIB, mail_per_hour=100,
                      ai_max_output_tokens=4096, ai_max_input_tokens=0,
                      ai_calls_per_minute=settings.free_ai_calls_per_minute,
                      ai_micro_cents_per_day=1 * DOLLAR, repo_storage_bytes=settings.free_repo_storage_bytes)


def every(settings: Settings) -> dict[str, PlanLimits]:
    return {plan.value: limits(settings, plan) for plan in Plan}
