"""The plans and what each allows: the one table every area with a limit reads (spec "Limits";
decisions.md's defaults). A downgrade keeps all data; a limit applies to new actions only."""

from __future__ import annotations

from dataclasses import dataclass

from svc.domains.orgs.settings import PlanSettings
from svc.models import Plan
from svc.settings import Config

# A dollar in micro-cents (AI's money: integers, never floats).
DOLLAR = 100_000_000


@dataclass(frozen=True)
class PlanLimits:
    projects: int
    storage_bytes: int
    mail_per_hour: int
    # How long a project's mail log keeps its messages (spec "Limits": keepDays).
    mail_keep_days: int
    # An AI call's output tokens at most, and its input tokens; 0: the model decides.
    ai_max_output_tokens: int
    ai_max_input_tokens: int
    # A project's AI calls a minute at most, and what they may cost in a day (micro-cents).
    ai_calls_per_minute: int
    ai_micro_cents_per_day: int
    # What the org's git repositories may hold on disk, deleted ones until they are purged.
    repo_storage_bytes: int
    # A project's database (docs/database.md, "Ceilings"): the connections its role, its token users,
    # env.db and the tunnel share; token users at once; a statement's seconds and an idle
    # transaction's seconds, enforced by the watchdog whatever a session sets.
    db_connections: int
    db_token_users: int
    db_statement_seconds: int
    db_idle_transaction_seconds: int


def limits(config: Config, plan: str) -> PlanLimits:
    """What `plan` allows on this server (the project counts and the AI calls a minute are settings:
    SVC_FREE_PROJECT_LIMIT, SVC_PRO_PROJECT_LIMIT, SVC_FREE_AI_CALLS_PER_MINUTE, SVC_PRO_AI_CALLS_PER_MINUTE,
    SVC_FREE_REPO_STORAGE_BYTES, SVC_PRO_REPO_STORAGE_BYTES, SVC_FREE_STORAGE_BYTES, SVC_PRO_STORAGE_BYTES:
    settings.py)."""
    settings = config.settings_of(PlanSettings)
    if plan == Plan.pro:
        return PlanLimits(projects=settings.pro_project_limit, storage_bytes=settings.pro_storage_bytes,
                          mail_per_hour=2000, mail_keep_days=365,
                          ai_max_output_tokens=0, ai_max_input_tokens=0,
                          ai_calls_per_minute=settings.pro_ai_calls_per_minute,
                          ai_micro_cents_per_day=100 * DOLLAR,
                          repo_storage_bytes=settings.pro_repo_storage_bytes, db_connections=40, db_token_users=16,
                          db_statement_seconds=120, db_idle_transaction_seconds=300)
    return PlanLimits(projects=settings.free_project_limit, storage_bytes=settings.free_storage_bytes,
                      mail_per_hour=100, mail_keep_days=30,
                      ai_max_output_tokens=4096, ai_max_input_tokens=0,
                      ai_calls_per_minute=settings.free_ai_calls_per_minute,
                      ai_micro_cents_per_day=1 * DOLLAR,
                      repo_storage_bytes=settings.free_repo_storage_bytes, db_connections=10, db_token_users=4,
                      db_statement_seconds=30, db_idle_transaction_seconds=60)


def every(config: Config) -> dict[str, PlanLimits]:
    return {plan.value: limits(config, plan) for plan in Plan}
