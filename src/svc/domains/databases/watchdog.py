"""The watchdog over the projects' sessions (docs/database.md, "Ceilings"): a cycle every
SVC_DATABASE_WATCHDOG_SECONDS, in whichever process takes its slot.

A role's statement_timeout and idle_in_transaction_session_timeout are defaults its sessions may
change (`SET statement_timeout = 0`, even `ALTER ROLE current_user SET ...`), and VALID UNTIL
gates a token user's new logins only. So each turn reads pg_stat_activity and, by the plan of the
session's project: cancels a statement running past the plan's bound, ends a session idle in a
transaction past its bound, and ends the sessions of every token user whose expiry passed and
drops it (its row goes too, and its connections go back to the project's role). A project holding
more connections than its plan's ceiling (after a downgrade) is shrunk to it.

A role may also change its own password, and a token user's session acts as the project's role:
each turn checks that every project's role still has svc's password on the node, and sets it back
and ends the role's sessions where it does not (a token user would keep the role for good, and
env.db would be locked out). svc's passwords are unsealed for the turn, in memory only."""

from __future__ import annotations

import logging

from svc.adapters.database.port import DatabaseNodeError, Watched
from svc.domains.databases import queries, service
from svc.domains.databases.node import limits_for
from svc.jobs.registry import JobRun
from svc.models import Plan
from svc.uow import Tx, UnitOfWork, use_case

log = logging.getLogger("svc.databases")


@use_case(Tx.READ_THEN_WRITE)  # the node is watched with nothing of the store held
async def watch(run: JobRun) -> None:
    await turn(run.uow)


async def turn(uow: UnitOfWork) -> Watched | None:
    """One turn (also what a test runs at once); None when there is nothing to watch."""
    node = uow.ctx.adapters.database
    plans = await queries.plans(uow.session)
    passwords = {row.project_id: service.password_of(uow.ctx, row) for row in await queries.all_grants(uow.session)}
    await uow.close_reads()
    if node is None or not plans:  # no project has a database: a private cluster is not started for this
        return None
    config = uow.ctx.config
    limits = {project_id: limits_for(config, plan) for project_id, plan in plans.items()}
    try:
        restored = await node.restore_passwords(passwords)
    except DatabaseNodeError as exc:
        log.warning("database watchdog: %s", exc)
    else:
        for project_id in restored:
            log.warning("database watchdog: the role of project %s had a password that is not svc's (changed by "
                        "one of its sessions): svc's is set again and the role's sessions are ended", project_id)
    try:
        watched = await node.watch(limits, default=limits_for(config, Plan.free))
    except DatabaseNodeError as exc:
        log.warning("database watchdog: %s", exc)
        return None
    if watched.cancelled or watched.ended:
        # A warning, with the backends: a statement cut off is what a project's owner asks about
        # (and what a test that saw one needs in its report).
        log.warning("database watchdog: cancelled the statements of backends %s, ended the idle transactions of %s",
                    watched.cancelled or "none", watched.ended or "none")
    if watched.cancelled or watched.ended or watched.dropped or watched.shrunk:
        log.info("database watchdog: %d statements cancelled, %d idle transactions ended, token users dropped: %s; "
                 "connections shrunk to the plan's ceiling: %s", len(watched.cancelled), len(watched.ended),
                 ", ".join(watched.dropped) or "none", ", ".join(watched.shrunk) or "none")
    if watched.dropped:
        session = await uow.begin_write()
        await queries.delete_tokens(session, watched.dropped)
    return watched
