"""Name rules shared by orgs and projects (decisions.md: lowercase a-z0-9 and inner '-')."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import StringConstraints, ValidationError, ValidatorFunctionWrapHandler, WrapValidator

from svc.kit.api import invalid

# Stated in the OpenAPI document and checked by pydantic-core, whose `$` (unlike Python's) does not
# match before a trailing newline: "acme\n" is not a slug.
SLUG_PATTERN = r"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$"
_RULE_BROKEN = frozenset({"string_too_short", "string_too_long", "string_pattern_mismatch"})


def _slug_rule(min_length: int, max_length: int) -> WrapValidator:
    """One sentence for every way a slug breaks the rule (too short, too long, a bad character),
    with the reason pydantic gave and the rule's bounds: "slug must be 3-32 characters: ..."."""
    rule = f"must be {min_length}-{max_length} characters: lowercase letters, digits and inner hyphens"

    def check(value: Any, handler: ValidatorFunctionWrapHandler) -> str:
        try:
            checked: str = handler(value)
        except ValidationError as exc:
            reason = exc.errors()[0]["type"]
            if reason not in _RULE_BROKEN:
                raise  # not a string at all: said as such
            raise invalid(reason, rule, min_length=min_length, max_length=max_length, pattern=SLUG_PATTERN) from None
        return checked

    return WrapValidator(check)


OrgSlug = Annotated[str, StringConstraints(min_length=3, max_length=32, pattern=SLUG_PATTERN), _slug_rule(3, 32)]
ProjectName = Annotated[str, StringConstraints(min_length=1, max_length=32, pattern=SLUG_PATTERN), _slug_rule(1, 32)]


def slug_from(text: str, *, min_len: int = 3, max_len: int = 32) -> str:
    """Derive a valid slug: lowercase, invalid runs to '-', trimmed, padded to min_len."""
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:max_len].strip("-")
    if len(s) < min_len:
        s = (s + "-user" if s else "user")[:max_len]
    return s
