"""The AI upstream port: an OpenAI-compatible chat completions API (the OpenAI API, OpenRouter, a
vLLM or Ollama server, or the fake), one per lane of the catalog."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol


class UpstreamError(Exception):
    """The upstream failed or did not answer; said in words (never with its key)."""


@dataclass(frozen=True)
class Completion:
    """The upstream's answer, and the usage it reported."""

    body: dict[str, Any]
    input_tokens: int
    output_tokens: int


class Upstream(Protocol):
    async def complete(self, body: dict[str, Any]) -> Completion: ...

    def stream(self, body: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        """A streamed call's events (OpenAI's chat.completion.chunk objects) as they arrive; the
        last carries the usage when the body asks for it (stream_options.include_usage). Raises
        UpstreamError when the call fails, also midway."""
        ...

    async def aclose(self) -> None: ...
