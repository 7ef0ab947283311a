"""Git provenance from the X-Svc-Git-* headers: display only, never used for authorization."""

from __future__ import annotations

import re
from typing import Annotated
from urllib.parse import unquote

from fastapi import Header

from svc.domains.deployments.errors import BadGitHeader
from svc.domains.deployments.schemas import GitInfo

MAX_MESSAGE = 200
MAX_BRANCH = 255
_RAW_MAX = 8192
_COMMIT = re.compile(r"[0-9a-fA-F]{7,64}")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
# The two headers parse_git refuses, as the document states them for clients (parse_git decides).
COMMIT_PATTERN = r"^\s*[0-9a-fA-F]{7,64}\s*$"
DIRTY_PATTERN = r"^\s*(?:[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee])\s*$"


def _decoded(raw: str) -> str:
    """Percent-decoded (UTF-8; invalid sequences become U+FFFD)."""
    return unquote(raw, encoding="utf-8", errors="replace")


def parse_git(commit: str | None, message: str | None, branch: str | None, dirty: str | None) -> GitInfo:
    info = GitInfo()
    if commit is not None:
        commit = commit.strip()
        if not _COMMIT.fullmatch(commit):
            raise BadGitHeader("X-Svc-Git-Commit must be 7 to 64 hex characters",
                               details={"header": "X-Svc-Git-Commit"})
        info.commit = commit.lower()
    if message is not None:
        first = _decoded(message).replace("\r", "\n").split("\n", 1)[0]
        info.message = _CONTROL.sub("", first).strip()[:MAX_MESSAGE] or None
    if branch is not None:
        info.branch = _CONTROL.sub("", _decoded(branch)).strip()[:MAX_BRANCH] or None
    if dirty is not None:
        value = dirty.strip().lower()
        if value not in ("true", "false"):
            raise BadGitHeader("X-Svc-Git-Dirty must be true or false", details={"header": "X-Svc-Git-Dirty"})
        info.dirty = value == "true"
    return info


def git_provenance(
    commit: Annotated[str | None, Header(alias="X-Svc-Git-Commit", max_length=_RAW_MAX,
                                         json_schema_extra={"pattern": COMMIT_PATTERN},
                                         description="Commit id, 7 to 64 hex characters")] = None,
    message: Annotated[str | None, Header(alias="X-Svc-Git-Message", max_length=_RAW_MAX,
                                          description="Percent-encoded; the first line is kept, cut at 200")] = None,
    branch: Annotated[str | None, Header(alias="X-Svc-Git-Branch", max_length=_RAW_MAX,
                                         description="Percent-encoded branch name, cut at 255")] = None,
    dirty: Annotated[str | None, Header(alias="X-Svc-Git-Dirty", max_length=_RAW_MAX,
                                        json_schema_extra={"pattern": DIRTY_PATTERN},
                                        description="true or false")] = None,
) -> GitInfo:
    """A FastAPI dependency: the deploy request's provenance headers, validated (400 when not)."""
    return parse_git(commit, message, branch, dirty)
