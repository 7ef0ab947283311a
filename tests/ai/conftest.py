"""The AI area's fixtures: svc's gateway pointed at a fake upstream (a real HTTP server speaking
OpenAI's API) for both lanes, with the runtime's token the tests call it with."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from svc.adapters.ai.fake import FakeUpstream
from svc.adapters.ai.openai import OpenAICompatible
from tests.support.api import Svc


@dataclass
class _Runtime:
    token: str = "runtime-token-of-the-test"


@pytest.fixture
async def upstream(svc: Svc) -> AsyncIterator[FakeUpstream]:
    fake = FakeUpstream()
    await fake.start()
    lanes = {lane: OpenAICompatible(base_url=fake.url, api_key=fake.api_key) for lane in ("frontier", "value")}
    svc.ctx.adapters.ai, svc.ctx.adapters.runtime = lanes, _Runtime()  # type: ignore[assignment]
    try:
        yield fake
    finally:
        for client in lanes.values():
            await client.aclose()
        svc.ctx.adapters.ai = {}
        await fake.stop()
