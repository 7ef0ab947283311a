"""The store's ways of running a statement, against each other on the paths that could use them, in one run.

    .venv/bin/python bench/store.py [--ops 300] [--rounds 5] [--stores sqlite,postgres]

A use case runs its statements through its session (docs/architecture.md, "The store"). Two ways
skip the ORM session's handling of a statement, and each is used only on a named hot path, where
this bench shows what it saves:

- `svc.db.plain_rows`: the rows of a Core read, on SQLite straight from a connection kept for such
  reads. `orgs.members`: a five-member org's member list in a read session, the query of
  `GET /v1/orgs/{org}/members` (bench/api.py). Against: the same statement through the session.
- a Core statement on the connection of the session's transaction (`await session.connection()`).
  No path uses it today; the candidates, each measured against it:
  - `ai.call`: the store part of one env.ai call, as svc.domains.ai.gateway runs it: call_subject,
    hold_if_covered, call_counts and reserve (one write transaction), then settle and add_usage
    (another);
  - `billing.webhook`: one `subscription.updated` delivery's transaction
    (svc.domains.billing.webhooks): lock_orgs, account_states, received, add_events, write_accounts;
  - `jobs.any_due`: the job worker's poll of an empty queue (twice a second), against plain_rows.

Each operation runs in sessions of its own, as a unit of work opens them (svc/uow.py). The same
query functions run both ways: as the code is, and with the session in a wrapper that sends every
statement the other way. The two alternate over the rounds. Figures: this process's CPU time per
operation (time.process_time: another process's load on the machine hardly moves it;
PostgreSQL's own work is not in it), the median round, and the ratio session/other way (above 1:
the other way is cheaper)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PG_BASE = os.environ.get("SVC_BENCH_PG", "postgresql://postgres@127.0.0.1:5432")

from svc.db import Database, migrate, open_database, plain_rows  # noqa: E402
from svc.domains.ai import queries as ai  # noqa: E402
from svc.domains.billing import queries as billing  # noqa: E402
from svc.domains.orgs import queries as orgs  # noqa: E402
from svc.jobs import queries as jobs  # noqa: E402
from svc.kit.clock import utcnow  # noqa: E402
from svc.kit.store_session import StoreSession  # noqa: E402
from svc.models import AICredit, BillingAccount, Membership, Org, Project, User  # noqa: E402
from svc.settings import Settings  # noqa: E402


class ThroughTheSession:
    """A read session that plain_rows does not know for SQLite's: it takes the session's path."""

    def __init__(self, session: StoreSession) -> None:
        self._session = session
        self.dialect = session.dialect

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


class OnTheConnection:
    """A session whose statements run on the connection of its transaction."""

    def __init__(self, session: StoreSession) -> None:
        self._session = session
        self.dialect = session.dialect

    async def execute(self, statement: Any, params: Any = None) -> Any:
        return await (await self._session.connection()).execute(statement, params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


class PlainReads(OnTheConnection):
    """A read session whose reads are plain_rows' (the `.first()` of a list of rows)."""

    async def execute(self, statement: Any, params: Any = None) -> Any:
        rows = await plain_rows(self._session, statement, params)
        return _Rows(rows)


class _Rows:
    def __init__(self, rows: Any) -> None:
        self.rows = rows

    def first(self) -> Any:
        return self.rows[0] if self.rows else None


Wrap = Callable[[StoreSession], Any]


async def _in(db: Database, wrap: Wrap, work: Callable[[Any], Awaitable[Any]], *, write: bool = True) -> None:
    session = db.write() if write else db.read()
    try:
        await work(wrap(session))
        if write:
            await session.finish(commit=True)
    finally:
        await session.close()


async def seed(db: Database) -> None:
    now = utcnow()
    async with db.transaction() as s:
        s.add(Org(id="org_bench", slug="bench", name="Bench", created_at=now))
        await s.flush()
        s.add(Project(id="prj_bench", org_id="org_bench", name="chat", created_at=now, state="active", manifest={}))
        s.add(AICredit(org_id="org_bench", balance_micro_cents=10**15, updated_at=now))
        s.add(BillingAccount(org_id="org_bench", provider="polar", customer_external_id="bench", created_at=now,
                             updated_at=now))
        for i in range(5):
            s.add(User(id=f"usr_{i}", provider="dev", subject=f"u{i}", email=f"u{i}@bench.test", name=f"User {i}",
                       created_at=now, last_login_at=now))
        await s.flush()
        for i in range(5):
            s.add(Membership(org_id="org_bench", user_id=f"usr_{i}", role="admin" if i == 0 else "member",
                             created_at=now))


def paths(db: Database) -> dict[str, tuple[Callable[[Wrap, int], Awaitable[None]], Wrap, Wrap, str]]:
    async def ai_call(wrap: Wrap, i: int) -> None:
        now = utcnow()
        reservation = f"res_{uuid.uuid4().hex[:16]}"

        async def reserve(s: Any) -> None:
            subject = await ai.call_subject(s, "prj_bench")
            assert subject is not None and subject.active
            assert await ai.hold_if_covered(s, subject.org_id, 5_000, now)
            await ai.call_counts(s, "prj_bench", "openai/gpt-4o-mini", now - timedelta(minutes=1),
                                 now - timedelta(days=1))
            await ai.reserve(s, reservation_id=reservation, org_id=subject.org_id, project_id="prj_bench",
                             micro_cents=5_000, now=now)

        async def settle(s: Any) -> None:
            entry = {"kind": "call", "micro_cents": -1_200, "project_id": "prj_bench", "model": "openai/gpt-4o-mini",
                     "input_tokens": 20, "output_tokens": 30}
            await ai.settle(s, org_id="org_bench", reservation_id=reservation, held=5_000, now=now, entry=entry)
            await ai.add_usage(s, "prj_bench", 1_200, now)

        await _in(db, wrap, reserve)
        await _in(db, wrap, settle)

    async def billing_webhook(wrap: Wrap, i: int) -> None:
        now = utcnow()
        webhook_id = f"msg_{uuid.uuid4().hex}"

        async def receive(s: Any) -> None:
            held = await billing.lock_orgs(s, ["bench"])
            org_id = held["bench"][0]
            accounts = await billing.account_states(s, [org_id])
            assert not await billing.received(s, [webhook_id])
            counts = await billing.add_events(s, [{"webhook_id": webhook_id, "type": "subscription.updated",
                                                   "received_at": now, "outcome": "applied", "detail": "active",
                                                   "org_slug": "bench", "payload": {"type": "subscription.updated"}}])
            assert counts == {webhook_id: 1}
            state = accounts[org_id] | {"status": "active", "subscription_id": "sub_bench", "provider_modified_at": now,
                                        "live_subscriptions": 1, "updated_at": now}
            await billing.write_accounts(s, {org_id: state}, set())

        await _in(db, wrap, receive)

    async def orgs_members(wrap: Wrap, i: int) -> None:
        async def read(s: Any) -> None:
            assert len(await orgs.members(s, "org_bench")) == 5

        await _in(db, wrap, read, write=False)

    async def jobs_any_due(wrap: Wrap, i: int) -> None:
        async def read(s: Any) -> None:
            assert not await jobs.any_due(s)

        await _in(db, wrap, read, write=False)

    # Each path: how to run it, the session's way, the other way and its name. The code takes
    # whichever of the two is `as_is`.
    return {"orgs.members": (orgs_members, ThroughTheSession, as_is, "plain_rows"),
            "ai.call": (ai_call, as_is, OnTheConnection, "on the connection"),
            "billing.webhook": (billing_webhook, as_is, OnTheConnection, "on the connection"),
            "jobs.any_due": (jobs_any_due, as_is, PlainReads, "plain_rows")}


def as_is(session: StoreSession) -> StoreSession:
    return session


async def measure(db: Database, run: Callable[[Wrap, int], Awaitable[None]], wrap: Wrap, ops: int) -> float:
    """CPU seconds of this process per operation."""
    start = time.process_time()
    for i in range(ops):
        await run(wrap, i)
    return (time.process_time() - start) / ops


async def bench_store(store: str, url: str | None, args: argparse.Namespace) -> dict[str, dict[str, float]]:
    tmp = Path(tempfile.mkdtemp(prefix="svc-bench-store-"))
    db = open_database(Settings(data_dir=tmp / "data", database_url=url))
    results: dict[str, dict[str, float]] = {}
    try:
        await migrate(db)
        await seed(db)
        for name, (run, session_way, other_way, way) in paths(db).items():
            for wrap in (session_way, other_way):  # warm-up: statements compiled, pools filled
                await measure(db, run, wrap, max(20, args.ops // 10))
            through: list[float] = []
            fast: list[float] = []
            for _ in range(args.rounds):
                through.append(await measure(db, run, session_way, args.ops))
                fast.append(await measure(db, run, other_way, args.ops))
            t, f = statistics.median(through), statistics.median(fast)
            code = "the session" if session_way is as_is else way
            results[name] = {"session_us": round(t * 1e6, 1), "other_us": round(f * 1e6, 1), "ratio": round(t / f, 2)}
            print(f"  {store:<9} {name:<16} the session {t * 1e6:7.1f} us/op   {way:<17} {f * 1e6:7.1f} us/op   "
                  f"session/other {t / f:4.2f}x   (the code: {code})", flush=True)
    finally:
        await db.dispose()
        shutil.rmtree(tmp, ignore_errors=True)
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", type=int, default=300, help="operations per path, variant and round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--stores", default="sqlite,postgres")
    args = ap.parse_args()
    print(f"store: the session against the other ways; Python {sys.version.split()[0]}; load average "
          f"{os.getloadavg()[0]:.2f}; CPU time of this process per operation, median of {args.rounds} rounds")
    out: dict[str, Any] = {}
    for store in args.stores.split(","):
        if store == "sqlite":
            out[store] = asyncio.run(bench_store(store, None, args))
            continue
        name = f"svc_bench_store_{uuid.uuid4().hex[:8]}"
        subprocess.run(["psql", "-X", "-q", f"{PG_BASE}/postgres", "-c", f"CREATE DATABASE {name}"], check=True)
        try:
            out[store] = asyncio.run(bench_store(store, f"{PG_BASE}/{name}", args))
        finally:
            subprocess.run(["psql", "-X", "-q", f"{PG_BASE}/postgres", "-c",
                            f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"], check=False)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
