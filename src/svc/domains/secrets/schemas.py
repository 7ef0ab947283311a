from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from svc.kit.api import ApiInput, ApiModel, Timestamp

# The byte bound (65,536 bytes of UTF-8) is checked by the service; this caps the characters.
MAX_VALUE_CHARS = 65_536


class SecretPut(ApiInput):
    value: Annotated[str, StringConstraints(max_length=MAX_VALUE_CHARS)] = Field(
        description="The secret value, at most 65,536 bytes as UTF-8. Sealed at rest; never returned.")


class SecretMeta(ApiModel):
    """A secret as listed: its name and version, never its value."""

    name: str
    version: int = Field(description="1 on the first set, bumped by every set")
    updated_at: Timestamp


class SecretList(ApiModel):
    secrets: list[SecretMeta]
