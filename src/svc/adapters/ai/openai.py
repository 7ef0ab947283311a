"""An OpenAI-compatible upstream over HTTP (POST {base}/chat/completions, Bearer key): the usage
it reports is what a call costs.

Every env.ai call goes through here, so what this client costs is what svc adds to a call: aiohttp,
whose HTTP parser is in C, takes 0.17 ms of CPU for a call that cost 0.42-0.46 ms through httpcore
(and more through httpx's client above it; bench/ai.py, docs/ai.md). The rest of svc speaks httpx."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp

from svc.adapters.ai.port import Completion, UpstreamError

# An event's line may be long (a tool call's arguments): read up to 1 MiB at a time (a line to twice that).
_READ_BYTES = 1024 * 1024


class OpenAICompatible:
    def __init__(self, *, base_url: str, api_key: str, timeout_seconds: float = 120.0) -> None:
        self.base_url = base_url.rstrip("/")
        self._url = f"{self.base_url}/chat/completions"
        self._headers = {"authorization": f"Bearer {api_key}", "content-type": "application/json"}
        # Each wait bounded (connecting, then each read), not the whole call: a long stream is fine.
        self._timeout = aiohttp.ClientTimeout(total=None, connect=timeout_seconds, sock_read=timeout_seconds)
        self._session: aiohttp.ClientSession | None = None  # made on the event loop, at the first call

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(headers=self._headers, timeout=self._timeout,
                                                  read_bufsize=_READ_BYTES, trust_env=False)
        return self._session

    async def complete(self, body: dict[str, Any]) -> Completion:
        try:
            async with self._client().post(self._url, data=json.dumps(body).encode()) as answer:
                content = await answer.read()
                status = answer.status
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
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
                async for raw in answer.content:
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
        except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as exc:
            # ValueError: a line longer than the reader holds
            raise UpstreamError(f"the model's provider did not finish ({type(exc).__name__})") from None

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def _said(content: bytes) -> str:
    """The provider's error message, from its answer's body (OpenAI's {"error": {"message"}})."""
    try:
        error = json.loads(content).get("error") or {}
        return str(error.get("message") or "no message")[:300]
    except (ValueError, AttributeError):
        return content.decode(errors="replace")[:300] or "no message"
