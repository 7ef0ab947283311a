"""An OpenAI-compatible upstream over HTTP (POST {base}/chat/completions, Bearer key): the usage
it reports is what a call costs."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx

from svc.adapters.ai.port import Completion, UpstreamError


class OpenAICompatible:
    def __init__(self, *, base_url: str, api_key: str, timeout_seconds: float = 120.0) -> None:
        self.base_url = base_url.rstrip("/")
        self._http = httpx.AsyncClient(base_url=self.base_url, timeout=timeout_seconds, trust_env=False,
                                       headers={"authorization": f"Bearer {api_key}"})

    async def complete(self, body: dict[str, Any]) -> Completion:
        try:
            answer = await self._http.post("/chat/completions", json=body)
        except httpx.HTTPError as exc:
            raise UpstreamError(f"the model's provider did not answer ({type(exc).__name__})") from None
        if answer.status_code != 200:
            raise UpstreamError(f"the model's provider answered {answer.status_code}: {_said(answer)}")
        try:
            data = answer.json()
            usage = data["usage"]
            return Completion(body=data, input_tokens=int(usage["prompt_tokens"]),
                              output_tokens=int(usage["completion_tokens"]))
        except (ValueError, KeyError, TypeError):
            raise UpstreamError("the model's provider answered without usage") from None

    async def stream(self, body: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        try:
            async with self._http.stream("POST", "/chat/completions", json=body) as answer:
                if answer.status_code != 200:
                    await answer.aread()
                    raise UpstreamError(f"the model's provider answered {answer.status_code}: {_said(answer)}")
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


def _said(answer: httpx.Response) -> str:
    try:
        error = answer.json().get("error") or {}
        return str(error.get("message") or "no message")[:300]
    except (ValueError, AttributeError):
        return answer.text[:300] or "no message"
