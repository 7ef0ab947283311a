"""The database node of this svc, or why there is none (503 no_node_admin, in the server's words)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from svc.adapters.database.port import DatabaseNode, DatabaseNodeError
from svc.context import AppContext
from svc.domains.databases import errors


def node_of(ctx: AppContext) -> DatabaseNode:
    node = ctx.adapters.database
    if node is None:
        reason = ctx.adapters.off.get("database")
        raise errors.DatabasesOff(f"Project databases are off on this server: {reason}" if reason else None)
    return node


@contextlib.contextmanager
def answering() -> Iterator[None]:
    """The node's failure inside, as the API says it: 503 no_home_node, in the node's words."""
    try:
        yield
    except DatabaseNodeError as exc:
        raise errors.NodeUnavailable(str(exc)) from None
