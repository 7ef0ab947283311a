"""Name rules shared by orgs and projects (decisions.md: lowercase a-z0-9 and inner '-')."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, StringConstraints

_SLUG = re.compile(r"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$")


def _check_slug(value: str) -> str:
    if not _SLUG.match(value):
        raise ValueError("use lowercase letters, digits and inner '-'")
    return value


OrgSlug = Annotated[str, StringConstraints(min_length=3, max_length=32), AfterValidator(_check_slug)]
ProjectName = Annotated[str, StringConstraints(min_length=1, max_length=32), AfterValidator(_check_slug)]


def slug_from(text: str, *, min_len: int = 3, max_len: int = 32) -> str:
    """Derive a valid slug: lowercase, invalid runs to '-', trimmed, padded to min_len."""
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:max_len].strip("-")
    if len(s) < min_len:
        s = (s + "-user" if s else "user")[:max_len]
    return s
