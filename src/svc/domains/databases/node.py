"""The database node of this svc, or why there is none (503 no_node_admin, in the server's words);
what a plan lets a project's database hold there."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from svc.adapters.database.port import CeilingReached, DatabaseNode, DatabaseNodeError, ProjectLimits
from svc.context import AppContext
from svc.domains.databases import errors
from svc.domains.orgs import service as orgs
from svc.settings import Config


def node_of(ctx: AppContext) -> DatabaseNode:
    node = ctx.adapters.database
    if node is None:
        reason = ctx.adapters.off.get("database")
        raise errors.DatabasesOff(f"Project databases are off on this server: {reason}" if reason else None)
    return node


@contextlib.contextmanager
def answering() -> Iterator[None]:
    """The node's failure inside, as the API says it: 503 no_home_node, in the node's words (409
    connection_ceiling or node_full when a ceiling refused)."""
    try:
        yield
    except CeilingReached as exc:
        error = errors.NodeFull if exc.code == "node_full" else errors.ConnectionCeiling
        raise error(str(exc)) from None
    except DatabaseNodeError as exc:
        raise errors.NodeUnavailable(str(exc)) from None


def limits_for(config: Config, plan: str) -> ProjectLimits:
    """The plan's database limits as the node holds them: each token user takes an even share of
    half the ceiling (at least one), so the role keeps the other half for env.db and the tunnel."""
    own = orgs.limits_of(config, plan)
    return ProjectLimits(connections=own.db_connections,
                         token_connections=max(1, own.db_connections // (2 * own.db_token_users)),
                         statement_seconds=own.db_statement_seconds,
                         idle_transaction_seconds=own.db_idle_transaction_seconds)
