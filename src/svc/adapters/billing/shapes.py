"""Polar's JSON shapes for the fake provider (fake.py), made from the official SDK's own models
(polar-sdk's `polar.v2026_10.outputs`): every field a real answer has is there, with a plain value
(an empty string, 0, the first of a literal's values, an empty list) unless the fake says otherwise,
so the SDK reads the fake's answers exactly as it reads Polar's. Only the fake uses this."""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any

from polar.v2026_10 import outputs

NOW = "2026-01-01T00:00:00Z"


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, vars(outputs))


def _value(hint: Any, depth: int) -> Any:
    origin = typing.get_origin(hint)
    if hint is type(None):
        return None
    if origin is typing.Literal:
        return typing.get_args(hint)[0]
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(options) < len(typing.get_args(hint)):
            return None
        return _value(options[0], depth)
    if origin is typing.Annotated:
        return _value(typing.get_args(hint)[0], depth)
    if origin in (list, tuple, set, frozenset):
        return []
    if origin is dict or hint is dict:
        return {}
    if hint is str:
        return ""
    if hint is bool:
        return False
    if hint in (int, float):
        return 0
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return shape(hint, depth + 1)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return shape(hint, depth + 1)
    if isinstance(hint, type) and typing.is_typeddict(hint):
        return {}
    return None


def shape(cls: Any, depth: int = 0, **values: Any) -> dict[str, Any]:
    """A JSON object of the SDK model `cls` with every field it requires, `values` given (of a
    union of models, the first)."""
    if typing.get_origin(cls) in (typing.Union, types.UnionType):
        cls = typing.get_args(cls)[0]
    if depth > 6:
        raise RecursionError(f"{cls.__name__} nests too deep for the fake")
    hints = _hints(cls)
    out: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        if field.name in values:
            out[field.name] = values[field.name]
            continue
        hint = hints[field.name]
        if field.name.endswith("_at") and _optional(hint) is False:
            out[field.name] = NOW
            continue
        out[field.name] = _value(hint, depth)
    return out


def _optional(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in typing.get_args(hint)
