"""AI upstreams (port.py): any OpenAI-compatible API (openai.py), one per lane of the catalog, and
a fake one that is a real HTTP server (fake.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import SecretStr

from svc.adapters.ai.port import Upstream
from svc.adapters.ai.settings import AiUpstreamSettings
from svc.settings import Config

if TYPE_CHECKING:
    from svc.adapters.ai.fake import FakeUpstream

# The HTTP client (aiohttp) and the fake's server are imported when an upstream is made, not with
# this module: `svc admin` and a start with no AI configured do not load them (bench/cli.py).

__all__ = ["build_upstreams", "describe", "start_fake_upstream"]

LANES = ("frontier", "value")


def _lanes(config: Config) -> tuple[tuple[str, str | None, SecretStr | None], ...]:
    """Each lane of the catalog with its upstream's URL and key, as set."""
    settings = config.settings_of(AiUpstreamSettings)
    return (("frontier", settings.ai_frontier_url, settings.ai_frontier_key),
            ("value", settings.ai_value_url, settings.ai_value_key))


def build_upstreams(config: Config) -> dict[str, Upstream]:
    """The upstream of each lane whose URL and key are set (SVC_AI_FRONTIER_URL/_KEY,
    SVC_AI_VALUE_URL/_KEY); a lane without one answers 503."""
    settings = config.settings_of(AiUpstreamSettings)
    found: dict[str, Upstream] = {}
    for lane, url, key in _lanes(config):
        if url and key is not None:
            from svc.adapters.ai.openai import OpenAICompatible

            found[lane] = OpenAICompatible(base_url=url, api_key=key.get_secret_value(),
                                           timeout_seconds=settings.ai_timeout_seconds)
    return found


async def start_fake_upstream(config: Config, found: dict[str, Upstream]) -> FakeUpstream | None:
    """SVC_AI_FAKE (development): the fake upstream on a free port, and every lane without an
    upstream pointed at it (in `found`). None when every lane has one."""
    settings = config.settings_of(AiUpstreamSettings)
    missing = [lane for lane in LANES if lane not in found]
    if not settings.ai_fake or not missing:
        return None
    from svc.adapters.ai.fake import FakeUpstream
    from svc.adapters.ai.openai import OpenAICompatible

    fake = FakeUpstream()
    await fake.start()
    for lane in missing:
        found[lane] = OpenAICompatible(base_url=fake.url, api_key=fake.api_key,
                                       timeout_seconds=settings.ai_timeout_seconds)
    return fake


def describe(config: Config) -> str:
    """The banner's ai line: where each lane's calls go."""
    settings = config.settings_of(AiUpstreamSettings)
    said = []
    for lane, url, key in _lanes(config):
        if url and key is not None:
            said.append(f"{lane} lane at {url}")
        elif settings.ai_fake:
            said.append(f"{lane} lane on a fake upstream in this process (development: its model echoes)")
        else:
            said.append(f"{lane} lane off (SVC_AI_{lane.upper()}_URL and _KEY)")
    return "; ".join(said)
