"""A fake AI upstream: a real HTTP server speaking the OpenAI chat completions API (POST
/v1/chat/completions, streamed over SSE or not), reporting usage the way OpenAI does. The tests and
`svc serve` in development talk to it; svc's gateway cannot tell it from the OpenAI API, OpenRouter,
vLLM or Ollama.

Its model answers "echo:" and the last user message, one token a word. Tokens are counted the same
way (a word is a token, each message two more), so a test knows to the token what a call costs.
Asked for `n` choices it answers each the same (a stream, the first) and counts each one's tokens.
The tests steer it through /_fake/mode: fail (500), cut a stream off after some chunks, bill
exactly what it was asked for (greedy: `n` times max_tokens, as a model that talks to its bound
does) or more than that (overbill: a provider that counts what the gateway cannot see)."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from svc.kit.local_server import LocalServer


def count_tokens(messages: list[dict[str, Any]]) -> int:
    """The fake's prompt tokens: a word is a token, each message costs two more."""
    return sum(len(str(m.get("content") or "").split()) + 2 for m in messages)


@dataclass
class FakeUpstreamState:
    # "ok", "fail" (500 to every call), "cut" (a stream stops after cut_after chunks), "greedy"
    # (usage: n x max_tokens out) or "overbill" (usage: more than that, and more in than the bytes sent).
    mode: str = "ok"
    cut_after: int = 2
    # Seconds each call takes before it answers.
    delay: float = 0.0
    # When set, each call waits for it before it answers: a test holds calls in flight, then lets them go.
    gate: asyncio.Event | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)


class FakeUpstream:
    def __init__(self, *, api_key: str = "sk-fake-upstream") -> None:
        self.api_key = api_key
        self.state = FakeUpstreamState()
        self.app = Starlette(routes=[
            Route("/v1/chat/completions", self.completions, methods=["POST"]),
            Route("/_fake/mode", self.set_mode, methods=["POST"]),
        ])
        self._server = LocalServer(self.app, "fake-ai-upstream")
        self.url = ""

    async def start(self, host: str = "127.0.0.1") -> None:
        self.url = await self._server.start(host) + "/v1"

    async def stop(self) -> None:
        await self._server.stop()

    async def set_mode(self, request: Request) -> Response:
        body = await request.json()
        self.state.mode = str(body.get("mode", "ok"))
        self.state.cut_after = int(body.get("cutAfter", 2))
        return JSONResponse({"mode": self.state.mode})

    async def completions(self, request: Request) -> Response:
        if request.headers.get("authorization") != f"Bearer {self.api_key}":
            return JSONResponse({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                                           "code": "invalid_api_key"}}, status_code=401)
        body = await request.json()
        self.state.calls.append(body)
        if self.state.delay:
            await asyncio.sleep(self.state.delay)
        if self.state.gate is not None:
            await self.state.gate.wait()
        if self.state.mode == "fail":
            return JSONResponse({"error": {"message": "The server had an error", "type": "server_error"}}, 500)
        messages = body.get("messages") or []
        last = next((str(m.get("content") or "") for m in reversed(messages) if m.get("role") == "user"), "")
        words = ["echo:", *last.split()]
        limit = body.get("max_completion_tokens") or body.get("max_tokens")
        choices = body.get("n") or 1
        finish = "stop"
        if isinstance(limit, int) and len(words) > limit:
            words, finish = words[:limit], "length"
        prompt, completion = count_tokens(messages), choices * len(words)
        if self.state.mode == "greedy" and isinstance(limit, int):
            completion = choices * limit
        elif self.state.mode == "overbill":
            prompt = 4 * len(json.dumps(messages).encode()) + 1000
            completion = 4 * choices * (limit if isinstance(limit, int) else len(words)) + 1000
        usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
        ident, created, model = f"chatcmpl-{uuid.uuid4().hex[:24]}", int(time.time()), str(body.get("model"))
        if not body.get("stream"):
            answer = [{"index": i, "message": {"role": "assistant", "content": " ".join(words)},
                       "finish_reason": finish} for i in range(choices)]
            return JSONResponse({"id": ident, "object": "chat.completion", "created": created, "model": model,
                                 "choices": answer, "usage": usage})
        with_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        return StreamingResponse(self._chunks(ident, created, model, words, finish, usage if with_usage else None),
                                 media_type="text/event-stream")

    async def _chunks(self, ident: str, created: int, model: str, words: list[str], finish: str,
                      usage: dict[str, int] | None) -> AsyncIterator[bytes]:
        def event(data: dict[str, Any]) -> bytes:
            return f"data: {json.dumps(data)}\n\n".encode()

        base = {"id": ident, "object": "chat.completion.chunk", "created": created, "model": model}
        yield event({**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                          "finish_reason": None}]})
        for i, word in enumerate(words):
            if self.state.mode == "cut" and i >= self.state.cut_after:
                return  # the connection ends midway: no finish, no usage, no [DONE]
            yield event({**base, "choices": [{"index": 0, "delta": {"content": (" " if i else "") + word},
                                              "finish_reason": None}]})
        yield event({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        if usage is not None:
            yield event({**base, "choices": [], "usage": usage})
        yield b"data: [DONE]\n\n"
