"""The gateway env.ai's calls go through (docs/ai.md): OpenAI's chat completions, checked and paid
for here, forwarded to the upstream of the model's lane. The worker never holds a key.

Budgets that do not hold under concurrency are the first complaint about AI proxies, so a call is
three short transactions around the upstream's answer:

1. **reserve**: with the org's credit row held, every check (grant, model, caps, balance) and the
   call's worst-case cost held back from the balance and counted against the project's daily cap;
2. the upstream call, with nothing of the store held;
3. **settle**: the exact cost from the usage the upstream reports, one ledger row and the balance it
   moves, and the reservation let go, in one transaction. A failed call lets it go and costs nothing.

So calls in flight can overrun neither the balance nor the daily cap: each one's worst case is
held before it starts. The body forwarded is rebuilt from an allow-list, and its worst case counts
every field that multiplies the cost (bodies.py). A provider that bills more than that anyway is
charged at most the hold: no call takes a balance or a cap below what its hold left. The rest is
svc's loss, kept for the operator with the settlement (ai_model_overruns), and svc stops lending to
that model (503 ai_model_stopped) until the operator resumes it, its estimate corrected.

A streamed call (`"stream": true`) is reserved the same way and its events relayed as they come;
svc asks the upstream for the usage at the end (stream_options.include_usage) and settles on it. A
stream cut off midway (the provider failing, or the worker going away) has no usage: it is charged
for what was delivered, the input at its estimate (a token each four bytes) and a token for each
event that carried text, which is how OpenAI-compatible servers stream."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from svc.adapters.ai.port import UpstreamError
from svc.context import AppContext
from svc.domains.ai import bodies, catalog, errors, queries, topups
from svc.domains.ai.settings import AISettings
from svc.domains.orgs import service as orgs
from svc.errors import BadRequest
from svc.kit.clock import utcnow
from svc.kit.ids import new_id
from svc.uow import Tx, UnitOfWork, unit_of_work

log = logging.getLogger("svc.ai")


@dataclass(frozen=True)
class Held:
    """A reserved call: what to forward, and what to settle."""

    reservation_id: str
    org_id: str
    project_id: str
    model: catalog.Model
    micro_cents: int
    body: dict[str, Any]
    # A token each four bytes of the prompt: what a cut-off stream's input is charged at.
    input_estimate: int
    # A streamed call whose worker asked for the usage event (the upstream is always asked).
    wants_usage: bool = False


async def _reserve(uow: UnitOfWork, project_id: str, body: dict[str, Any], *, stream: bool = False) -> Held:
    session = uow.session
    subject = await queries.call_subject(session, project_id)
    if subject is None or not subject.active:
        raise errors.ProjectGone()
    if not subject.granted:
        raise errors.NotGranted()
    if subject.manifest.get("ai") is not True:
        raise errors.NotDeclared()
    asked = bodies.read(body)
    model = catalog.load(uow.ctx.settings_of(AISettings).ai_catalog).get(asked.model_id)
    if model is None:
        raise errors.UnknownModel(details={"model": asked.model_id[:100]})
    if model.lane not in uow.ctx.adapters.ai:
        raise errors.Unavailable(details={"lane": model.lane})
    limits = orgs.limits_of(uow.ctx.config, subject.plan)

    estimate = -(-asked.prompt_bytes // 4)  # a token is about four bytes: the cap and the context are checked on it
    if limits.ai_max_input_tokens and estimate > limits.ai_max_input_tokens:
        raise errors.OverCallCap(f"The prompt is about {estimate} tokens: over the project's maxInputTokens "
                                 f"({limits.ai_max_input_tokens})", details={"cap": "maxInputTokens"})
    if estimate >= model.context_tokens:
        raise BadRequest(f"The prompt is about {estimate} tokens: over {model.id}'s context "
                         f"({model.context_tokens})")
    most = min(model.max_output_tokens, limits.ai_max_output_tokens or model.max_output_tokens)
    if asked.max_output is not None and asked.max_output > most:
        raise errors.OverCallCap(f"{asked.bound_field} {asked.max_output} is over what this call may ask ({most}: "
                                 "maxOutputTokens, or the model's own)", details={"cap": "maxOutputTokens"})
    output = asked.max_output or most
    worst = model.cost(*bodies.worst_tokens(asked, model, output))

    # The org's credit row, held: every reservation of the org takes its turn here. Where the
    # balance covers the worst case (nearly every call), holding it back is that one statement; a
    # cap refused below rolls it back with the rest.
    now = utcnow()
    amounts = None
    if not await queries.hold_if_covered(session, subject.org_id, worst, now):
        amounts = await queries.amounts_held(session, subject.org_id)
        if amounts is None:
            await queries.ensure_credit(session, subject.org_id, now)
            amounts = await queries.amounts_held(session, subject.org_id)
            assert amounts is not None
    recent, held, spent, stopped = await queries.call_counts(
        session, project_id, model.id, now - timedelta(minutes=1), now - timedelta(hours=24))
    if stopped is not None:
        raise errors.ModelStopped(details={"model": model.id, "since": stopped.isoformat()})
    if recent >= limits.ai_calls_per_minute:
        raise errors.OverCap(f"The project made {limits.ai_calls_per_minute} calls in the last minute: its "
                             f"maxCallsPerMinute", details={"cap": "maxCallsPerMinute"})
    if spent + held + worst > limits.ai_micro_cents_per_day:
        raise errors.OverCap("The call's worst case would pass the project's maxMicroCentsPerDay "
                             f"({limits.ai_micro_cents_per_day})",
                             details={"cap": "maxMicroCentsPerDay", "spentMicroCents24h": spent,
                                      "inFlightMicroCents": held, "worstCaseMicroCents": worst})
    if amounts is not None:  # not held above: the balance, read under the row's lock, decides
        balance, reserved = amounts
        if balance - reserved < worst:
            raise errors.InsufficientCredit(details={"balanceMicroCents": balance, "inFlightMicroCents": reserved,
                                                     "worstCaseMicroCents": worst})
        await queries.hold(session, subject.org_id, worst, now)
    reservation_id = new_id("air")
    await queries.reserve(session, reservation_id=reservation_id, org_id=subject.org_id, project_id=project_id,
                          micro_cents=worst, now=now)
    forwarded = bodies.forwarded(asked, model.upstream_id or model.id, output, stream=stream)
    return Held(reservation_id, subject.org_id, project_id, model, worst, forwarded, estimate,
                stream and asked.wants_usage)


class _Settling:
    """This app's calls settling after their worker went away, held until they have (ctx.state_of)."""

    def __init__(self) -> None:
        self.tasks: set[asyncio.Future[Any]] = set()

    def settled(self, task: asyncio.Future[Any]) -> None:
        self.tasks.discard(task)
        if not task.cancelled():
            task.exception()  # read: a failure nobody waited for is the caller's, not asyncio's to report


def _finish(ctx: AppContext, work: Awaitable[Any]) -> asyncio.Future[Any]:
    """Runs to its end whoever waits for it: a worker that gives up on a call (its request
    cancelled) leaves no hold behind, nor an answer the provider bills unpaid."""
    settling = ctx.state_of(_Settling)
    task = asyncio.ensure_future(work)
    settling.tasks.add(task)
    task.add_done_callback(settling.settled)
    return task


async def drain(ctx: AppContext) -> None:
    """Until every settlement under way in this app has landed (svc stopping; a test reading the
    ledger). Another app's, in the same process, are not waited for."""
    settling = ctx.state_of(_Settling)
    while settling.tasks:
        await asyncio.gather(*list(settling.tasks), return_exceptions=True)


async def chat(ctx: AppContext, project_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """One env.ai chat completion of a project's worker (not streamed): the upstream's answer."""
    async with unit_of_work(ctx, Tx.WRITE) as uow:
        held = await _reserve(uow, project_id, body)
    return await asyncio.shield(_finish(ctx, _forward_and_settle(ctx, held)))  # type: ignore[no-any-return]


async def _forward_and_settle(ctx: AppContext, held: Held) -> dict[str, Any]:
    try:
        answer = await ctx.adapters.ai[held.model.lane].complete(held.body)
    except UpstreamError as exc:
        await _failed(ctx, held, exc)
        raise errors.UpstreamFailed(f"The model's provider failed ({exc}); nothing was charged") from None
    await _settle(ctx, held, answer.input_tokens, answer.output_tokens)
    return {**answer.body, "model": held.model.id}


async def chat_stream(ctx: AppContext, project_id: str, body: dict[str, Any]) -> AsyncIterator[bytes]:
    """A streamed env.ai call: its server-sent events, once the upstream has sent its first (a
    provider that fails at once is a 502 that costs nothing, as without stream)."""
    async with unit_of_work(ctx, Tx.WRITE) as uow:
        held = await _reserve(uow, project_id, body, stream=True)
    events = ctx.adapters.ai[held.model.lane].stream(held.body)
    try:
        first = await anext(events, None)
    except UpstreamError as exc:
        await asyncio.shield(_finish(ctx, _failed(ctx, held, exc)))
        raise errors.UpstreamFailed(f"The model's provider failed ({exc}); nothing was charged") from None
    except BaseException:
        await asyncio.shield(_finish(ctx, _release(ctx, held)))
        raise
    return _relay(ctx, held, events, first)


async def _relay(ctx: AppContext, held: Held, events: AsyncIterator[dict[str, Any]],
                 first: dict[str, Any] | None) -> AsyncIterator[bytes]:
    usage: dict[str, Any] | None = None
    delivered = 0
    try:
        async with contextlib.aclosing(events):  # type: ignore[type-var]
            chunk = first
            while chunk is not None:
                if isinstance(chunk.get("usage"), dict):
                    usage = chunk["usage"]
                delivered += sum(1 for choice in chunk.get("choices") or [] if _carries_text(choice))
                if chunk.get("choices") or held.wants_usage:
                    yield _event({**chunk, "model": held.model.id})
                chunk = await anext(events, None)
        yield b"data: [DONE]\n\n"
    except UpstreamError as exc:
        log.warning("ai: %s for project %s (%s) cut off: %s", held.model.id, held.project_id, held.reservation_id,
                    exc)
        yield _event({"error": {"message": f"The model's provider failed midway ({exc}); what was delivered is "
                                           "charged", "type": "ai_upstream_error", "code": "ai_upstream_error"}})
    finally:
        input_tokens, output_tokens = _used(held, usage, delivered)
        # Shielded: a worker that goes away mid-stream still pays for what was delivered.
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(_finish(ctx, _settle(ctx, held, input_tokens, output_tokens)))


def _carries_text(choice: Any) -> bool:
    delta = choice.get("delta") if isinstance(choice, dict) else None
    return isinstance(delta, dict) and bool(delta.get("content") or delta.get("tool_calls")
                                            or delta.get("reasoning_content"))


def _used(held: Held, usage: dict[str, Any] | None, delivered: int) -> tuple[int, int]:
    """The tokens a stream is charged for: the upstream's usage, else what was delivered."""
    try:
        if usage is not None:
            return int(usage["prompt_tokens"]), int(usage["completion_tokens"])
    except (KeyError, TypeError, ValueError):
        pass
    return (held.input_estimate if delivered else 0), delivered


def _event(data: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(data, separators=(",", ":")).encode() + b"\n\n"


async def _settle(ctx: AppContext, held: Held, input_tokens: int, output_tokens: int) -> None:
    """The call's exact cost: its ledger row and the balance it moves, the hold let go, at once."""
    cost = billed = held.model.cost(input_tokens, output_tokens)
    if cost > held.micro_cents:
        # The provider billed more than the worst case svc held (it counted what svc cannot see):
        # the org pays the hold, as it agreed to, and svc bears the rest.
        log.warning("ai: %s for project %s (%s) billed %d micro-cents, over its hold of %d: svc's loss %d; "
                    "calls for it are refused until the operator resumes it", held.model.id, held.project_id,
                    held.reservation_id, cost, held.micro_cents, cost - held.micro_cents)
        cost = held.micro_cents
    charged = bool(input_tokens or output_tokens)
    async with unit_of_work(ctx, Tx.WRITE) as uow:
        now = utcnow()
        if billed > cost:
            # Kept with the charge (one transaction): the loss for the operator, and the model's
            # stop, so no further call is lent on an estimate shown wrong.
            await queries.overran(uow.session, model=held.model.id, org_id=held.org_id, project_id=held.project_id,
                                  held=held.micro_cents, billed=billed, now=now)
        entry = {"kind": "call", "micro_cents": -cost, "project_id": held.project_id, "model": held.model.id,
                 "input_tokens": input_tokens, "output_tokens": output_tokens} if charged else None
        settled = await queries.settle(uow.session, org_id=held.org_id, reservation_id=held.reservation_id,
                                       held=held.micro_cents, now=now, entry=entry)
        if not charged:
            return
        await queries.add_usage(uow.session, held.project_id, cost, now)
        topups.low_balance(uow.session, held.org_id, settled)
        if settled.autotopup and settled.threshold is not None and settled.after < settled.threshold:
            # Below the threshold: the charge, as a job of this commit (the row is held already).
            credit = await queries.credit(uow.session, held.org_id, lock=True)
            assert credit is not None
            await topups.maybe_top_up(uow, credit)


async def _failed(ctx: AppContext, held: Held, exc: UpstreamError) -> None:
    log.warning("ai: %s for project %s (%s): %s", held.model.id, held.project_id, held.reservation_id, exc)
    await _release(ctx, held)


async def _release(ctx: AppContext, held: Held) -> None:
    """The hold let go, nothing charged (the call failed, or never reached the provider)."""
    await _settle(ctx, held, 0, 0)


async def release_stale(uow: UnitOfWork, before: datetime) -> int:
    """Let go the holds of calls that started before `before` and never settled (the process that
    ran them was killed): the balance and the daily cap get them back. How many."""
    stale = await queries.stale_reservations(uow.session, before)
    for reservation in stale:
        await queries.settle(uow.session, org_id=reservation.org_id, reservation_id=reservation.id,
                             held=reservation.micro_cents, now=utcnow(), entry=None)
    if stale:
        log.warning("ai: let go %d holds of calls that never settled (a crash)", len(stale))
    return len(stale)


async def forget_usage(uow: UnitOfWork, before: datetime) -> None:
    """The spend by minute before `before` (a day's caps never read it again; the ledger keeps all)."""
    await queries.purge_usage(uow.session, before)
