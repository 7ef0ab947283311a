"""A fake domain registrar: a real HTTP server with its own protocol and its own state (prices,
charges and their ledger, the account's registrations with their contacts), which client.py speaks.
Run by the tests and by `svc serve` with SVC_REGISTRAR=fake (in-process, on a free port).

Its API, under /v1 (JSON; `Authorization: Bearer <api key>`; every error is
`{"error": {"code", "message", "field"}}`):

    POST /v1/check                         {"names"} -> {"results": [{"name", "available", "priceCents",
                                                                      "renewalCents"}]}
    GET  /v1/tlds                          -> {"tlds": ["app", "com", ...]} (what it registers under)
    POST /v1/charges                       {"name", "years", "amountCents", "idempotencyKey"} -> 201 charge
                                           (200, the same charge, for a key seen before)
    POST /v1/charges/{id}/refund           -> charge, "status": "refunded"
    POST /v1/domains                       {"name", "years", "contact", "chargeId"} -> 201 domain (200 again)
    GET  /v1/domains/{name}                -> domain
    PUT  /v1/domains/{name}/nameservers    {"nameservers"} -> domain
    POST /v1/domains/{name}/renew          {"years", "idempotencyKey"} -> domain
    PUT  /v1/domains/{name}/lock           {"locked"} -> domain
    PUT  /v1/domains/{name}/auto-renew     {"enabled"} -> domain
    POST /v1/domains/{name}/auth-code      -> {"code"}
    GET  /v1/domains/{name}/ds             -> {"ds": ["12345 13 2 3A1F..."]} (sent to the registry)
    PUT  /v1/domains/{name}/ds             {"ds"} -> {"ds"} (exactly these from now on; [] none)

For the tests, `/_fake/...` (no key): override a name's price, let somebody else take a name, move a
domain out of the account, set its expiry, queue failures of a step (declined, rejected, 500, no
answer, done but the answer lost, garbage, taken just before), and read the ledger, the
registrations and the calls (and how many are held now), and make every API call wait (`POST
/_fake/latency {"ms"}`: a real registrar's pace, for benchmarks; reset ends it). The same actions
are methods of FakeRegistrar, for tests in this process."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import string
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from svc.adapters.registrar.fake_state import (
    PRICES,
    Domain,
    Failure,
    Price,
    Refusal,
    RegistrarState,
    iso,
    need_bool,
    need_contact,
    need_ds,
    need_name,
    need_nameservers,
    need_text,
    need_years,
    normal_name,
    parse_iso,
)
from svc.kit.local_server import LocalServer

# How long a call is held at most (modes timeout and lost; stop() and /_fake/release end it sooner).
HOLD_SECONDS = 60.0
GARBAGE = "<html>oops</html>"

Handler = Callable[[Request, dict[str, Any]], Awaitable[Response]]


class FakeRegistrar:
    DEFAULT_KEY = "fake-registrar-key"

    def __init__(self, api_key: str = DEFAULT_KEY) -> None:
        self.api_key = api_key
        self.state = RegistrarState()
        self.url = ""
        self._release = asyncio.Event()
        self._held = 0  # calls held now (modes timeout and lost)
        v1 = self._v1
        self.app = Starlette(routes=[
            Route("/v1/check", v1("check", self._check), methods=["POST"]),
            Route("/v1/tlds", v1("tlds", self._tlds), methods=["GET"]),
            Route("/v1/charges", v1("charge", self._charge), methods=["POST"]),
            Route("/v1/charges/{id}/refund", v1("refund", self._refund), methods=["POST"]),
            Route("/v1/domains", v1("register", self._register), methods=["POST"]),
            Route("/v1/domains/{name}", v1("domain", self._domain), methods=["GET"]),
            Route("/v1/domains/{name}/nameservers", v1("nameservers", self._nameservers), methods=["PUT"]),
            Route("/v1/domains/{name}/renew", v1("renew", self._renew), methods=["POST"]),
            Route("/v1/domains/{name}/lock", v1("lock", self._lock), methods=["PUT"]),
            Route("/v1/domains/{name}/auto-renew", v1("auto-renew", self._auto_renew), methods=["PUT"]),
            Route("/v1/domains/{name}/auth-code", v1("auth-code", self._auth_code), methods=["POST"]),
            Route("/v1/domains/{name}/ds", v1("ds", self._ds), methods=["GET", "PUT"]),
            Route("/_fake/ledger", self._admin_ledger, methods=["GET"]),
            Route("/_fake/domains", self._admin_domains, methods=["GET"]),
            Route("/_fake/calls", self._admin_calls, methods=["GET"]),
            Route("/_fake/{action}", self._admin, methods=["POST"]),
        ])
        self._server = LocalServer(self.app, "fake-registrar")

    # --- running ---

    async def start(self, host: str = "127.0.0.1") -> str:
        self._release = asyncio.Event()  # on the loop that serves
        self.url = await self._server.start(host)
        return self.url

    async def stop(self) -> None:
        self._release.set()  # calls held to time out end now
        await self._server.stop()

    # --- the API ---

    def _v1(self, step: str, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        """`handler` behind the key check, the reading of the body, and the failures queued for `step`."""

        async def endpoint(request: Request) -> Response:
            started, state = time.monotonic(), self.state  # a reset meanwhile starts a log of its own
            if state.latency_ms:
                await asyncio.sleep(state.latency_ms / 1000)
            answer = await self._answer(step, handler, request)
            state.calls.append({"step": step, "at": iso(datetime.now(UTC)), "status": answer.status_code,
                                     "durationMs": round((time.monotonic() - started) * 1000)})
            return answer

        return endpoint

    async def _answer(self, step: str, handler: Handler, request: Request) -> Response:
        try:
            if request.headers.get("authorization") != f"Bearer {self.api_key}":
                raise Refusal(401, "unauthorized", "no such API key")
            body = await _body(request)
            failure = self.state.next_failure(step)
            if failure is not None and failure.mode == "lost":
                try:
                    return await handler(request, body)
                finally:
                    await self._hold()
            if failure is not None:
                held = await self._fail(failure, request, body)
                if held is not None:
                    return held
            return await handler(request, body)
        except Refusal as refusal:
            return JSONResponse(refusal.body(), refusal.status)

    async def _hold(self) -> None:
        """Until /_fake/release or stop() (HOLD_SECONDS at most)."""
        self._held += 1
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._release.wait(), HOLD_SECONDS)
        finally:
            self._held -= 1

    async def _fail(self, failure: Failure, request: Request, body: dict[str, Any]) -> Response | None:
        """The queued failure's answer; None when the call then goes on (taken: the name is gone first)."""
        mode = failure.mode
        if mode == "decline":
            raise Refusal(402, "payment_declined", failure.message or "the account's card was declined")
        if mode == "reject":
            raise Refusal(422, "rejected", failure.message or "the registrar refused the request", failure.field)
        if mode == "error":
            raise Refusal(500, "internal_error", failure.message or "something went wrong at the registrar")
        if mode == "garbage":
            return Response(GARBAGE, 200, media_type="text/html")
        if mode == "timeout":
            await self._hold()
            raise Refusal(503, "unavailable_now", "the call was held and let go")
        # taken: somebody else registers the name just before this call.
        name = request.path_params.get("name", body.get("name"))
        if isinstance(name, str) and name:
            self.state.take(normal_name(name))
        return None

    async def _check(self, request: Request, body: dict[str, Any]) -> Response:
        names = body.get("names")
        if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
            raise Refusal(422, "invalid_request", "names must be a list of domain names", "names")
        if len(names) > 100:
            raise Refusal(422, "invalid_request", "at most 100 names a call", "names")
        return JSONResponse({"results": [self.state.quote(normal_name(name)) for name in names]})

    async def _tlds(self, request: Request, body: dict[str, Any]) -> Response:
        return JSONResponse({"tlds": sorted(PRICES)})

    async def _ds(self, request: Request, body: dict[str, Any]) -> Response:
        domain = self._mine(request)
        if request.method == "PUT":
            domain.ds = need_ds(body.get("ds"))
        return JSONResponse({"ds": list(domain.ds)})

    async def _charge(self, request: Request, body: dict[str, Any]) -> Response:
        amount = body.get("amountCents")
        if not isinstance(amount, int) or isinstance(amount, bool) or amount <= 0:
            raise Refusal(422, "invalid_request", "amountCents must be a positive whole number", "amountCents")
        made, new = self.state.charge(name=need_name(body.get("name")), years=need_years(body), amount_cents=amount,
                                      key=need_text(body, "idempotencyKey"))
        return JSONResponse(made.json(), 201 if new else 200)

    async def _refund(self, request: Request, body: dict[str, Any]) -> Response:
        return JSONResponse(self.state.refund(request.path_params["id"]).json())

    async def _register(self, request: Request, body: dict[str, Any]) -> Response:
        name = need_name(body.get("name"))
        years = need_years(body)
        charge_id = need_text(body, "chargeId")
        contact = need_contact(body.get("contact"))
        domain, new = self.state.register(name=name, years=years, contact=contact, charge_id=charge_id)
        return JSONResponse(domain.json(), 201 if new else 200)

    async def _domain(self, request: Request, body: dict[str, Any]) -> Response:
        return JSONResponse(self._mine(request).json())

    async def _nameservers(self, request: Request, body: dict[str, Any]) -> Response:
        domain = self._mine(request)
        domain.nameservers = need_nameservers(body.get("nameservers"))
        return JSONResponse(domain.json())

    async def _renew(self, request: Request, body: dict[str, Any]) -> Response:
        name = normal_name(request.path_params["name"])
        domain = self.state.renew(name, years=need_years(body), key=need_text(body, "idempotencyKey"))
        return JSONResponse(domain.json())

    async def _lock(self, request: Request, body: dict[str, Any]) -> Response:
        domain = self._mine(request)
        domain.locked = need_bool(body, "locked")
        return JSONResponse(domain.json())

    async def _auto_renew(self, request: Request, body: dict[str, Any]) -> Response:
        domain = self._mine(request)
        domain.auto_renew = need_bool(body, "enabled")
        return JSONResponse(domain.json())

    async def _auth_code(self, request: Request, body: dict[str, Any]) -> Response:
        self._mine(request)
        alphabet = string.ascii_letters + string.digits
        return JSONResponse({"code": "".join(secrets.choice(alphabet) for _ in range(16))})

    def _mine(self, request: Request) -> Domain:
        return self.state.in_account(normal_name(request.path_params["name"]))

    # --- for the tests, in this process ---

    def set_price(self, name: str, *, price_cents: int | None = None, renewal_cents: int | None = None,
                  available: bool | None = None) -> None:
        """Override one name's quote (None keeps its TLD's price; available=False: reserved)."""
        self.state.prices[normal_name(name)] = Price(price_cents, renewal_cents, available)

    def taken(self, name: str) -> None:
        """Somebody else registers the name now."""
        self.state.take(normal_name(name))

    def fail(self, step: str, mode: str, *, times: int = 1, field: str | None = None,
             message: str | None = None) -> None:
        """The next `times` calls of `step` answer so (after any failures queued before). Modes:
        decline (402), reject (422 naming `field`), error (500), timeout (held until release(), then
        not done), lost (done, its answer held until release()), garbage (200, not JSON), taken
        (somebody else takes the name just before)."""
        self.state.queue(step, Failure(mode, field, message), times)

    def set_latency(self, ms: float) -> None:
        """Every API call from now on is answered after `ms` milliseconds (0: at once), within its
        durationMs in the call log."""
        self.state.latency_ms = float(ms)

    def holding(self) -> int:
        """How many calls are held now (timeout and lost): a test's sign that they all arrived."""
        return self._held

    def release(self) -> None:
        """Let go of the calls held to time out (those to come are held again)."""
        self._release.set()
        self._release = asyncio.Event()

    def transferred_away(self, name: str) -> None:
        """The domain leaves this account (transferred to another registrar)."""
        self.state.transfer_away(normal_name(name))

    def expire(self, name: str, expires_at: datetime) -> None:
        self.state.in_account(normal_name(name)).expires_at = expires_at.astimezone(UTC)

    def ledger(self) -> list[dict[str, Any]]:
        return [dict(entry) for entry in self.state.ledger]

    def domains(self) -> list[dict[str, Any]]:
        """Every registration made here, its contact and charge with it (inAccount false once gone)."""
        return [domain.admin_json() for domain in self.state.domains.values()]

    def ds(self, name: str) -> list[str]:
        """The DS records the registrar sends the registry for a domain of the account."""
        return list(self.state.in_account(normal_name(name)).ds)

    def calls(self, step: str | None = None) -> list[dict[str, Any]]:
        return [dict(call) for call in self.state.calls if step is None or call["step"] == step]

    def reset(self) -> None:
        self.release()
        self.state = RegistrarState()

    # --- for the tests, over HTTP ---

    async def _admin(self, request: Request) -> Response:
        action = request.path_params["action"]
        try:
            body = await _body(request)
            if action == "prices":
                self.set_price(need_name(body.get("name")), price_cents=_cents(body, "priceCents"),
                               renewal_cents=_cents(body, "renewalCents"), available=_flag(body, "available"))
            elif action == "taken":
                self.taken(need_name(body.get("name")))
            elif action == "fail":
                times = body.get("times", 1)
                if not isinstance(times, int) or isinstance(times, bool):
                    raise Refusal(400, "bad_request", "times must be a whole number", "times")
                self.fail(need_text(body, "step"), need_text(body, "mode"), times=times,
                          field=_text(body, "field"), message=_text(body, "message"))
            elif action == "release":
                self.release()
            elif action == "latency":
                ms = body.get("ms")
                if not isinstance(ms, (int, float)) or isinstance(ms, bool) or not 0 <= ms <= HOLD_SECONDS * 1000:
                    raise Refusal(400, "bad_request", "ms must be a number of milliseconds from 0 to 60000", "ms")
                self.set_latency(ms)
            elif action == "transferred-away":
                self.transferred_away(need_name(body.get("name")))
            elif action == "expire":
                try:
                    when = parse_iso(need_text(body, "expiresAt"))
                except ValueError:
                    raise Refusal(400, "bad_request", "expiresAt is not an ISO 8601 time", "expiresAt") from None
                self.expire(need_name(body.get("name")), when)
            elif action == "reset":
                self.reset()
            else:
                raise Refusal(404, "not_found", f"no such action {action}")
        except Refusal as refusal:
            return JSONResponse(refusal.body(), refusal.status)
        return JSONResponse({"ok": True})

    async def _admin_ledger(self, request: Request) -> Response:
        return JSONResponse({"entries": self.ledger()})

    async def _admin_domains(self, request: Request) -> Response:
        return JSONResponse({"domains": self.domains()})

    async def _admin_calls(self, request: Request) -> Response:
        return JSONResponse({"calls": self.calls(request.query_params.get("step")), "holding": self.holding()})


async def _body(request: Request) -> dict[str, Any]:
    """The request's JSON object ({} without a body)."""
    raw = await request.body()
    if not raw:
        return {}
    try:
        body = json.loads(raw)
    except ValueError:
        raise Refusal(400, "bad_request", "the body is not JSON") from None
    if not isinstance(body, dict):
        raise Refusal(400, "bad_request", "the body is not a JSON object")
    return body


def _cents(body: dict[str, Any], key: str) -> int | None:
    value = body.get(key)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
        raise Refusal(400, "bad_request", f"{key} must be a whole number of cents", key)
    return value


def _flag(body: dict[str, Any], key: str) -> bool | None:
    value = body.get(key)
    if value is not None and not isinstance(value, bool):
        raise Refusal(400, "bad_request", f"{key} must be true or false", key)
    return value


def _text(body: dict[str, Any], key: str) -> str | None:
    value = body.get(key)
    return str(value) if value is not None else None
