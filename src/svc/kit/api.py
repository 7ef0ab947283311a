"""Base pydantic models for the public interface: camelCase JSON, unknown fields refused."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, PlainSerializer
from pydantic.alias_generators import to_camel

from svc.kit.clock import rfc3339

Timestamp = Annotated[datetime, PlainSerializer(rfc3339, return_type=str, when_used="json")]


class ApiModel(BaseModel):
    """Response bodies: camelCase keys."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, from_attributes=True)


class ApiInput(BaseModel):
    """Request bodies: camelCase keys, unknown keys are a 400, strings are stripped of nothing."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")
