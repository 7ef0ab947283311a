"""The plans' limits that are settings (the rest of the plan table is plans.py)."""

from __future__ import annotations

from pydantic import Field

from svc.settings import AreaSettings


class PlanSettings(AreaSettings):
    # Plans: how many projects an org on the free plan may have.
    free_project_limit: int = 3
    # Plans: how many projects an org on the pro plan may have.
    pro_project_limit: int = 100
    # Plans: env.ai calls a minute of an org on the free plan.
    free_ai_calls_per_minute: int = Field(default=20, ge=1)
    # Plans: env.ai calls a minute of an org on the pro plan.
    pro_ai_calls_per_minute: int = Field(default=600, ge=1)
    # Plans: what an org's repositories on the free plan may hold on disk, in bytes.
    free_repo_storage_bytes: int = Field(default=1024**3, ge=0)
    # Plans: what an org's repositories on the pro plan may hold on disk, in bytes.
    pro_repo_storage_bytes: int = Field(default=25 * 1024**3, ge=0)
    # Plans: what a project's object storage on the free plan may hold, in bytes (its quota).
    free_storage_bytes: int = Field(default=1024**3, ge=0)
    # Plans: what a project's object storage on the pro plan may hold, in bytes (its quota).
    pro_storage_bytes: int = Field(default=100 * 1024**3, ge=0)
