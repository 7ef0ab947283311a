"""Base pydantic models for the public interface: camelCase JSON, unknown fields refused."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, PlainSerializer, model_validator
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from svc.kit.clock import rfc3339

Timestamp = Annotated[datetime, PlainSerializer(rfc3339, return_type=str, when_used="json")]


def invalid(reason: str, predicate: str, **constraints: Any) -> PydanticCustomError:
    """A validation failure of a request field, for a validator to raise. `predicate` is said of
    the field ("must not be empty" -> "name must not be empty", errors.py adds the field's name),
    so it never holds the input; `reason` is the machine reason clients read (a pydantic error type
    such as "string_too_short" or "value_error"); `constraints` use pydantic's context names
    (min_length, max_length, pattern, ge, le) and show in the error entry (minLength, ...)."""
    return PydanticCustomError(reason, predicate, constraints or None)


class ApiModel(BaseModel):
    """Response bodies: camelCase keys."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, from_attributes=True)


class ApiInput(BaseModel):
    """Request bodies: camelCase keys, unknown keys are a 400, strings are stripped of nothing."""

    # Only the camelCase names the contract lists: `expires_in_days` is an unknown field, not an alias.
    model_config = ConfigDict(alias_generator=to_camel, validate_by_alias=True, validate_by_name=False,
                              extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _no_nul(cls, data: Any) -> Any:
        # PostgreSQL cannot store NUL in text; refuse it up front on both stores alike.
        if _has_nul(data):
            raise invalid("value_error", "must not contain NUL characters")
        return data


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


def trimmed(min_length: int) -> AfterValidator:
    """After the raw length checks (StringConstraints(max_length=...), the bound the schema states):
    drop surrounding whitespace, then require `min_length` characters. Stripping first would let
    a value over the stated bound through once trimmed."""

    def check(value: str) -> str:
        value = value.strip()
        if len(value) < min_length:
            if min_length == 1:
                raise invalid("string_too_short", "must not be empty or only whitespace", min_length=1)
            raise invalid("string_too_short", f"must have at least {min_length} characters besides surrounding "
                          "whitespace", min_length=min_length)
        return value

    return AfterValidator(check)


def _whole_float(value: Any) -> Any:
    """A JSON number with nothing after the point (237.0) is the integer JSON Schema says it is."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# With a strict int: an integer as JSON Schema has it, 237 or 237.0, never "237", true or 237.5.
WHOLE_NUMBER = BeforeValidator(_whole_float)
