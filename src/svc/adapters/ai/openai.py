"""An OpenAI-compatible upstream over HTTP (POST {base}/chat/completions, Bearer key): the usage
it reports is what a call costs.

Every env.ai call goes through here, so what this client costs is what svc adds to a call: aiohttp,
whose HTTP parser is in C, takes 0.17 ms of CPU for a call that cost 0.42-0.46 ms through httpcore
(and more through httpx's client above it; bench/ai.py, docs/ai.md). The rest of svc speaks httpx."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import aiohttp.http_exceptions

from svc.adapters.ai.port import Completion, UpstreamError

# An event's line may be long (a tool call's arguments), but not without end: a provider that sends
# more than this without a line break is refused, not held in memory.
_LINE_BYTES = 2 * 1024 * 1024
# What a call that fails on the way raises (aiohttp's parser errors are not ClientErrors).
_FAILURES = (TimeoutError, aiohttp.ClientError, aiohttp.http_exceptions.HttpProcessingError, OSError)


class OpenAICompatible:
    def __init__(self, *, base_url: str, api_key: str, timeout_seconds: float = 120.0) -> None:
        self.base_url = base_url.rstrip("/")
        self._url = f"{self.base_url}/chat/completions"
        self._headers = {"authorization": f"Bearer {api_key}", "content-type": "application/json"}
        # Each wait bounded (connecting, then each read), not the whole call: a long stream is fine.
        self._timeout = aiohttp.ClientTimeout(total=None, connect=timeout_seconds, sock_read=timeout_seconds)
        self._session: aiohttp.ClientSession | None = None  # made on the event loop, at the first call
        self._loop: asyncio.AbstractEventLoop | None = None

    def _client(self) -> aiohttp.ClientSession:
        """The session of the running event loop (a session belongs to the loop it was made on: the
        same adapter serving a later loop gets a new one). No cookies are kept (one provider, every
        tenant's calls) and no cap on connections (each waiting call would count against its connect
        timeout; the plan's caps bound the calls)."""
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._loop is not loop:
            self._session = aiohttp.ClientSession(
                headers=self._headers, timeout=self._timeout, trust_env=False, cookie_jar=aiohttp.DummyCookieJar(),
                connector=aiohttp.TCPConnector(limit=0))
            self._loop = loop
        return self._session

    async def complete(self, body: dict[str, Any]) -> Completion:
        try:
            async with self._client().post(self._url, data=json.dumps(body).encode()) as answer:
                content = await answer.read()
                status = answer.status
        except _FAILURES as exc:
            raise UpstreamError(f"the model's provider did not answer ({type(exc).__name__})") from None
        if status != 200:
            raise UpstreamError(f"the model's provider answered {status}: {_said(content)}")
        try:
            data = json.loads(content)
            usage = data["usage"]
            return Completion(body=data, input_tokens=int(usage["prompt_tokens"]),
                              output_tokens=int(usage["completion_tokens"]))
        except (ValueError, KeyError, TypeError):
            raise UpstreamError("the model's provider answered without usage") from None

    async def stream(self, body: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        try:
            async with self._client().post(self._url, data=json.dumps(body).encode()) as answer:
                if answer.status != 200:
                    raise UpstreamError(f"the model's provider answered {answer.status}: "
                                        f"{_said(await answer.read())}")
                async for raw in _lines(answer.content):
                    line = raw.decode("utf-8", "replace").strip()
                    if not line.startswith("data:"):
                        continue  # blank lines between events, comments (": keep-alive"), event names
                    data = line[5:].strip()
                    if data == "[DONE]":
                        return
                    try:
                        chunk = json.loads(data)
                    except ValueError:
                        raise UpstreamError("the model's provider sent an unreadable event") from None
                    if not isinstance(chunk, dict):
                        raise UpstreamError("the model's provider sent an unreadable event")
                    if chunk.get("error"):
                        message = str((chunk["error"] or {}).get("message") or "no message")[:300]
                        raise UpstreamError(f"the model's provider failed midway: {message}")
                    yield chunk
                raise UpstreamError("the model's provider ended the stream before it finished")
        except _FAILURES as exc:
            raise UpstreamError(f"the model's provider did not finish ({type(exc).__name__})") from None

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


async def _lines(body: aiohttp.StreamReader) -> AsyncIterator[bytes]:
    """The lines of a stream of server-sent events, whichever of CR LF, LF or CR ends them (the
    format allows each); UpstreamError for a line over _LINE_BYTES."""
    pending = b""
    async for data in body.iter_any():
        pending += data
        lines = pending.splitlines(keepends=True)
        # The last piece may be a line still arriving (or a CR whose LF is in the next chunk).
        pending = lines.pop() if lines and not lines[-1].endswith(b"\n") else b""
        if len(pending) > _LINE_BYTES:
            raise UpstreamError(f"the model's provider sent an event over {_LINE_BYTES // (1024 * 1024)} MiB")
        for line in lines:
            yield line
    if pending:
        yield pending


def _said(content: bytes) -> str:
    """The provider's error message, from its answer's body (OpenAI's {"error": {"message"}})."""
    try:
        error = json.loads(content).get("error") or {}
        return str(error.get("message") or "no message")[:300]
    except (ValueError, AttributeError):
        return content.decode(errors="replace")[:300] or "no message"
