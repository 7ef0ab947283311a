"""The rules of a repository's name and of a branch name (git's own, `git check-ref-format`)."""

from __future__ import annotations

import re

# GitHub's rule: letters, digits, '.', '_' and '-'; not '.' or '..' ('.' cannot start it), and not
# ending in '.git' (the URL adds it).
NAME_PATTERN = r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}$"
NAME_WORDS = ("must start with a letter, a digit, _ or - and hold only letters, digits, '.', '_' and '-' "
              "(at most 100)")
_NAME = re.compile(NAME_PATTERN)

BRANCH_WORDS = ("must be a branch name git accepts: no spaces, '..', '~', '^', ':', '?', '*', '[', '\\' or '@{', "
                "not starting with '-' or '/', not ending with '/', '.' or '.lock' (at most 255)")
_BRANCH_BAD = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|//|@\{")


def name_problem(name: str) -> str | None:
    """Why `name` is not a repository name (None: it is one)."""
    if not _NAME.match(name):
        return NAME_WORDS
    if name.lower().endswith(".git"):
        return "must not end in '.git' (the clone URL adds it)"
    return None


def branch_problem(branch: str) -> str | None:
    """Why `branch` is not a branch name git accepts (None: it is one)."""
    if not branch or len(branch) > 255 or branch == "@" or _BRANCH_BAD.search(branch):
        return BRANCH_WORDS
    if branch.startswith(("-", "/")) or branch.endswith(("/", ".", ".lock")):
        return BRANCH_WORDS
    if any(part.startswith(".") or part.endswith(".lock") for part in branch.split("/")):
        return BRANCH_WORDS
    return None
