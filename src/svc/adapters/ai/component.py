"""The AI upstreams as a component: one OpenAI-compatible API per lane (built from the settings),
and, with SVC_AI_FAKE, a fake upstream the serving process runs for the lanes without one."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from svc.adapters.ai import build_upstreams, describe, start_fake_upstream
from svc.adapters.ai.settings import AiUpstreamSettings
from svc.settings import Config
from svc.supervisor.component import Component, Launch, Line


@contextlib.asynccontextmanager
async def _start(ctx: Any, launch: Launch) -> AsyncIterator[None]:
    fake = await start_fake_upstream(ctx.config, ctx.adapters.ai)
    try:
        yield
    finally:
        for upstream in ctx.adapters.ai.values():  # their connections (a later start opens new ones)
            with contextlib.suppress(Exception):
                await upstream.aclose()
        if fake is not None:
            await fake.stop()


def _banner(config: Config, launch: Launch) -> list[Line]:
    return [Line("ai", describe(config))]


COMPONENT = Component(name="ai", settings=AiUpstreamSettings, slot="ai", build=build_upstreams, start=_start,
                      banner=_banner)
