"""An OpenAI-compatible upstream over HTTP (POST {base}/chat/completions, Bearer key): the usage
it reports is what a call costs."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpcore
import httpx

from svc.adapters.ai.port import Completion, UpstreamError


class OpenAICompatible:
    def __init__(self, *, base_url: str, api_key: str, timeout_seconds: float = 120.0) -> None:
        self.base_url = base_url.rstrip("/")
        self._http = httpx.AsyncClient(base_url=self.base_url, timeout=timeout_seconds, trust_env=False,
                                       headers={"authorization": f"Bearer {api_key}"})
        # A whole answer (every env.ai.chat()) goes through httpx's own transport, httpcore, directly:
        # the client's layers above it (its URL, cookie and redirect handling) cost a third of the
        # call's own work in svc (0.3 ms of 0.9, bench/ai.py). Streamed calls keep the client.
        self._pool = httpcore.AsyncConnectionPool()
        self._url = f"{self.base_url}/chat/completions"
        self._headers = [(b"authorization", f"Bearer {api_key}".encode()), (b"content-type", b"application/json")]
        self._timeouts = {"timeout": dict.fromkeys(("connect", "read", "write", "pool"), timeout_seconds)}

    async def complete(self, body: dict[str, Any]) -> Completion:
        try:
            answer = await self._pool.request("POST", self._url, headers=self._headers,
                                              content=json.dumps(body).encode(), extensions=self._timeouts)
        except (*_HTTPCORE_FAILURES, OSError) as exc:
            raise UpstreamError(f"the model's provider did not answer ({type(exc).__name__})") from None
        if answer.status != 200:
            raise UpstreamError(f"the model's provider answered {answer.status}: {_said(answer.content)}")
        try:
            data = json.loads(answer.content)
            usage = data["usage"]
            return Completion(body=data, input_tokens=int(usage["prompt_tokens"]),
                              output_tokens=int(usage["completion_tokens"]))
        except (ValueError, KeyError, TypeError):
            raise UpstreamError("the model's provider answered without usage") from None

    async def stream(self, body: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        try:
            async with self._http.stream("POST", "/chat/completions", json=body) as answer:
                if answer.status_code != 200:
                    raise UpstreamError(f"the model's provider answered {answer.status_code}: "
                                        f"{_said(await answer.aread())}")
                async for line in answer.aiter_lines():
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
        except httpx.HTTPError as exc:
            raise UpstreamError(f"the model's provider did not finish ({type(exc).__name__})") from None

    async def aclose(self) -> None:
        await self._http.aclose()
        await self._pool.aclose()


# What httpcore raises when a call fails on the way (it has no common base class of its own).
_HTTPCORE_FAILURES = (httpcore.TimeoutException, httpcore.NetworkError, httpcore.ProtocolError,
                      httpcore.UnsupportedProtocol)


def _said(content: bytes) -> str:
    """The provider's error message, from its answer's body (OpenAI's {"error": {"message"}})."""
    try:
        error = json.loads(content).get("error") or {}
        return str(error.get("message") or "no message")[:300]
    except (ValueError, AttributeError):
        return content.decode(errors="replace")[:300] or "no message"
