"""What the gateway forwards of a worker's chat completions body, and the most that body can cost.

svc pays the provider for a call and charges the org after it, holding the call's worst case in
between (gateway.py). That holds only if the provider is sent nothing whose cost svc did not bound:
a body forwarded as it came could ask for 20 choices (`n`) where the worst case counted one, or for
a provider's extras (web search, audio, predicted outputs, OpenRouter's fallback `models`) billed
beyond the tokens. So the body is rebuilt from an allow-list of OpenAI's fields, each of which either
costs nothing or is counted in the worst case; a field svc knows multiplies the cost in a way it
cannot bound is refused in words (400 `ai_unbounded_request`), and any other field is dropped.

The worst case (`worst_tokens`): the output at `n` times the call's bound (max_completion_tokens or
max_tokens, else the most the project may ask of the model), the input at one token a byte of the
prompt (messages, tools, the response format) plus a few for each part, never more than the model's
context; a prompt with parts the provider counts beyond their bytes (an image, audio, a file) at the
model's whole context.

Built for the hot path: one pass over the body's keys and one JSON encoding of the messages, as
before the allow-list (bench/ai.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from svc.domains.ai import catalog, errors
from svc.errors import BadRequest

# Choices a call may ask for (`n`): each one's worst case is held, so more would hold a lot for little.
MAX_CHOICES = 8
# Tokens a message (or a tool) may cost beyond its text (roles, separators), for the worst case.
PER_PART_TOKENS = 8

# Forwarded as they came: none adds to what a call costs beyond the tokens counted below.
FORWARDED = frozenset({
    "temperature", "top_p", "frequency_penalty", "presence_penalty", "stop", "seed", "logit_bias", "logprobs",
    "top_logprobs", "response_format", "tools", "tool_choice", "parallel_tool_calls", "functions",
    "function_call", "user", "safety_identifier", "prompt_cache_key", "reasoning_effort", "verbosity",
})
# Fields of the prompt the provider counts as input tokens, beside the messages.
_PROMPT = ("tools", "functions", "response_format")
# Known to multiply a call's cost, or to be billed beyond its tokens: refused, never dropped (the
# caller asked for something it would silently not get).
REFUSED = {
    "best_of": "best_of asks for several completions billed and one returned",
    "use_beam_search": "beam search generates several sequences billed and one returned",
    "audio": "audio output is billed at its own rate",
    "web_search_options": "web search is billed per call beyond the tokens",
    "prediction": "a predicted output's rejected tokens are billed beyond max_tokens",
    "plugins": "a provider's plugins are billed beyond the tokens",
}
# Content parts the provider counts by what they hold, not by their bytes.
_TEXT = "text"


@dataclass(frozen=True, slots=True)
class Asked:
    """A worker's chat completions body, read: what svc forwards of it and what bounds its cost."""

    model_id: str
    # The allow-listed fields (messages and `n` among them), without the model, the bound or the stream.
    fields: dict[str, Any]
    prompt_bytes: int
    # The messages and tools: each costs a few tokens beyond its bytes.
    parts: int
    # A part the provider counts beyond its bytes (an image, audio, a file): the input's worst case
    # is the model's context.
    opaque: bool
    choices: int
    # Tokens a choice may produce, as the body asks (None: not said, svc sets it).
    max_output: int | None
    # The name the bound goes under: the one the body used (a reasoning model takes only
    # max_completion_tokens), max_tokens when it used none.
    bound_field: str
    # The worker asked for the usage event of a stream.
    wants_usage: bool


def read(body: dict[str, Any]) -> Asked:
    """The body's fields allowed, checked and measured; BadRequest / Unbounded for what cannot be sent."""
    fields = {key: value for key, value in body.items() if key in FORWARDED}
    refused = min(REFUSED.keys() & body.keys(), default=None)
    if refused is not None:
        raise errors.Unbounded(f"{refused}: not forwarded, {REFUSED[refused]} (svc holds a call's worst case before "
                               "it starts, and cannot bound this)", details={"field": refused})
    modalities = body.get("modalities")
    # (Compared, not hashed: a body may hold any JSON there, an object among them.)
    if modalities is not None and (not isinstance(modalities, list) or any(m != _TEXT for m in modalities)):
        raise errors.Unbounded("modalities: only [\"text\"] (audio output is billed at its own rate)",
                               details={"field": "modalities"})

    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("messages: a non-empty list of chat messages")
    fields["messages"] = messages
    size = len(json.dumps(messages, ensure_ascii=False).encode())
    parts = len(messages)
    for key in _PROMPT if len(fields) > 1 else ():  # none of them without another allowed field
        value = body.get(key)
        if value is not None:
            size += len(json.dumps(value, ensure_ascii=False).encode())
            parts += len(value) if isinstance(value, list) else 1

    choices = body.get("n", 1)
    if choices is None:
        choices = 1
    if not _positive(choices):
        raise BadRequest("n: a positive integer, the number of choices")
    if choices > MAX_CHOICES:
        raise errors.Unbounded(f"n: at most {MAX_CHOICES} choices a call (each one's worst case is held before the "
                               f"call); make {-(-choices // MAX_CHOICES)} calls instead",
                               details={"field": "n", "most": MAX_CHOICES})
    if choices != 1:
        fields["n"] = choices

    completion, tokens = body.get("max_completion_tokens"), body.get("max_tokens")
    if completion is not None and not _positive(completion):
        raise BadRequest("max_completion_tokens: a positive integer")
    if tokens is not None and not _positive(tokens):
        raise BadRequest("max_tokens: a positive integer")
    bound = tokens if completion is None else completion if tokens is None else min(completion, tokens)
    options = body.get("stream_options")
    return Asked(model_id=str(body.get("model") or ""), fields=fields, prompt_bytes=size, parts=parts,
                 opaque=_opaque(messages), choices=choices, max_output=bound,
                 bound_field="max_completion_tokens" if completion is not None else "max_tokens",
                 wants_usage=isinstance(options, dict) and options.get("include_usage") is True)


def _positive(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _opaque(messages: list[Any]) -> bool:
    """Whether a message holds what the provider counts beyond its bytes: a content part that is not
    text (an image by URL, audio, a file), or an earlier answer's audio."""
    for message in messages:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if isinstance(content, list) and any(not isinstance(p, dict) or p.get("type") != _TEXT for p in content):
            return True
        if message.get("audio") is not None:
            return True
    return False


def worst_tokens(asked: Asked, model: catalog.Model, output: int) -> tuple[int, int]:
    """The most input and output tokens the call can be billed, each choice producing `output`."""
    if asked.opaque:
        prompt = model.context_tokens
    else:
        prompt = min(asked.prompt_bytes + PER_PART_TOKENS * asked.parts, model.context_tokens)
    return prompt, asked.choices * output


def forwarded(asked: Asked, upstream_model: str, output: int, *, stream: bool) -> dict[str, Any]:
    """The body the provider gets: the allowed fields, its model's upstream name, the bound set, and
    for a stream the usage asked for (svc settles on it)."""
    body = {**asked.fields, "model": upstream_model, asked.bound_field: output, "stream": stream}
    if stream:
        body["stream_options"] = {"include_usage": True}
    return body
