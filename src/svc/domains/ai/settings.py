"""The AI area's own settings."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator

from svc.domains.ai import catalog
from svc.settings import AreaSettings


class AISettings(AreaSettings):
    # The model catalog (catalog.toml beside the area, by default): read and checked when svc
    # starts, so a mistake stops the start instead of pricing a call wrongly.
    ai_catalog: Path = catalog.DEFAULT
    # Automatic top-ups an org may have in one day (UTC) at most.
    ai_autotopup_per_day: int = Field(default=3, ge=1, le=50)

    @field_validator("ai_catalog")
    @classmethod
    def _readable_catalog(cls, path: Path) -> Path:
        catalog.load(path)  # a CatalogError (a ValueError) names the file and the model at fault
        return path
