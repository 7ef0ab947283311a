"""adapters/ai/openai.py against providers that answer in ways the fake does not: a raw HTTP server
on a free port, each answer its canned bytes (then the connection closed)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from svc.adapters.ai.openai import OpenAICompatible
from svc.adapters.ai.port import UpstreamError

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
USAGE = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}


def chunk(text: str, **extra: Any) -> bytes:
    return json.dumps({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": text}}],
                       **extra}).encode()


async def serve(answer: bytes, status: str = "200 OK",
                kind: str = "text/event-stream") -> tuple[asyncio.Server, str]:
    async def one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")  # the request's head (its body is not read)
        writer.write(f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nConnection: close\r\n\r\n".encode() + answer)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(one, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{port}/v1"


@pytest.fixture
async def provider() -> AsyncIterator[Callable[..., Any]]:
    servers: list[asyncio.Server] = []
    adapters: list[OpenAICompatible] = []

    async def make(answer: bytes, **kwargs: str) -> OpenAICompatible:
        server, url = await serve(answer, **kwargs)
        servers.append(server)
        adapters.append(OpenAICompatible(base_url=url, api_key="sk-test", timeout_seconds=30))
        return adapters[-1]

    yield make
    for adapter in adapters:
        await adapter.aclose()
    for server in servers:
        server.close()


async def events(upstream: OpenAICompatible) -> list[dict[str, Any]]:
    return [event async for event in upstream.stream(BODY)]


@pytest.mark.parametrize("end", [b"\r\n", b"\n", b"\r"])
async def test_events_are_read_whichever_line_ending_the_provider_uses(provider: Any, end: bytes) -> None:
    upstream = await provider(b"".join([b": keep-alive", end, end, b"data: ", chunk("Hel"), end, end,
                                        b"data: ", chunk("lo", usage=USAGE), end, end, b"data: [DONE]", end, end]))
    said = await events(upstream)
    assert [e["choices"][0]["delta"]["content"] for e in said] == ["Hel", "lo"]
    assert said[-1]["usage"] == USAGE


async def test_an_event_over_two_mib_is_a_failure_in_words(provider: Any) -> None:
    upstream = await provider(b"data: " + chunk("x" * (3 * 1024 * 1024)) + b"\n\n")
    with pytest.raises(UpstreamError, match="an event over 2 MiB"):
        await events(upstream)


async def test_a_stream_that_ends_before_done_is_a_failure(provider: Any) -> None:
    upstream = await provider(b"data: " + chunk("Hel") + b"\n\n")
    with pytest.raises(UpstreamError, match="ended the stream before it finished"):
        await events(upstream)


async def test_a_refusal_gives_the_providers_message(provider: Any) -> None:
    upstream = await provider(json.dumps({"error": {"message": "model overloaded"}}).encode(),
                              status="429 Too Many Requests", kind="application/json")
    with pytest.raises(UpstreamError, match="answered 429: model overloaded"):
        await upstream.complete({**BODY, "stream": False})


async def test_one_adapter_serves_one_event_loop_after_another(provider: Any) -> None:
    """A session belongs to the loop it was made on: a later loop gets a new one (svc started
    again in one process, as the tests do)."""
    whole = json.dumps({"choices": [{"message": {"content": "hi"}}], "usage": USAGE}).encode()
    server, url = await serve(whole, kind="application/json")
    upstream = OpenAICompatible(base_url=url, api_key="sk-test", timeout_seconds=30)

    def on_a_loop_of_its_own() -> int:
        async def call() -> int:
            return (await upstream.complete({**BODY, "stream": False})).output_tokens
        return asyncio.run(call())

    try:
        assert await asyncio.to_thread(on_a_loop_of_its_own) == 2
        assert await asyncio.to_thread(on_a_loop_of_its_own) == 2
        assert (await upstream.complete({**BODY, "stream": False})).output_tokens == 2
    finally:
        await upstream.aclose()
        server.close()
