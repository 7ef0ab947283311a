"""The AI upstreams' settings: the OpenAI-compatible APIs env.ai's lanes call (docs/ai.md)."""

from __future__ import annotations

from pydantic import Field, SecretStr

from svc.settings import ComponentSettings


class AiUpstreamSettings(ComponentSettings):
    # The frontier lane's upstream: any OpenAI-compatible API's base URL (https://api.openai.com/v1,
    # OpenRouter, a vLLM or Ollama server); a lane without URL and key answers 503 ai_unavailable.
    ai_frontier_url: str | None = None
    # The frontier lane's upstream's key.
    ai_frontier_key: SecretStr | None = None
    # The value lane's upstream's base URL.
    ai_value_url: str | None = None
    # The value lane's upstream's key.
    ai_value_key: SecretStr | None = None
    # How long svc waits for an upstream's answer, in seconds.
    ai_timeout_seconds: float = Field(default=120.0, gt=0, le=600)
    # Development: svc runs a fake OpenAI-compatible upstream itself (its model echoes the last
    # message, a token a word) for each lane without a URL, so env.ai works with no provider.
    ai_fake: bool = False
