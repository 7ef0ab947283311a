"""The model catalog: the models env.ai can call, their lane and price (catalog.toml beside this
module, or the file SVC_AI_CATALOG names). Read and checked once, when svc starts: a mistake in it
stops the start with the line at fault, never a wrong price at call time."""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

DEFAULT = Path(__file__).parent / "catalog.toml"


class CatalogError(ValueError):
    """The catalog file cannot be used (said in words, with where)."""


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._:/-]{0,99}$")
    lane: Literal["frontier", "value"]
    provider: str | None = Field(default=None, pattern=r"^[a-z0-9][a-z0-9-]{0,39}$")
    list_price: bool
    # Integer micro-cents per one million tokens (never a float: money is counted exactly).
    input_micro_cents_per_mtok: int = Field(ge=0, strict=True)
    output_micro_cents_per_mtok: int = Field(ge=0, strict=True)
    context_tokens: int = Field(gt=0, strict=True)
    max_output_tokens: int = Field(gt=0, strict=True)
    # The name the upstream knows it by, when not the id (the OpenAI API's "gpt-4o-mini" for
    # "openai/gpt-4o-mini"; OpenRouter takes the id as it is).
    upstream_id: str | None = Field(default=None, max_length=200)

    @model_validator(mode="after")
    def _lanes(self) -> Model:
        if self.lane == "frontier":
            if self.provider is None:
                raise ValueError("a frontier model names its provider")
            if not self.id.startswith(f"{self.provider}/"):
                raise ValueError(f"a frontier model's id starts with its provider ({self.provider}/)")
            if not self.list_price:
                raise ValueError("a frontier model is sold at the provider's list price (list_price = true)")
        elif self.provider is not None:
            raise ValueError("a value model has no provider field")
        if self.max_output_tokens > self.context_tokens:
            raise ValueError("max_output_tokens is more than context_tokens")
        return self

    def cost(self, input_tokens: int, output_tokens: int) -> int:
        """What a call costs, in micro-cents, rounded up (integers throughout)."""
        total = input_tokens * self.input_micro_cents_per_mtok + output_tokens * self.output_micro_cents_per_mtok
        return -(-total // 1_000_000)


class Catalog(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    models: tuple[Model, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> Catalog:
        ids = [m.id for m in self.models]
        twice = sorted({i for i in ids if ids.count(i) > 1})
        if twice:
            raise ValueError(f"model ids listed twice: {', '.join(twice)}")
        return self

    def get(self, model_id: str) -> Model | None:
        return next((m for m in self.models if m.id == model_id), None)


def read(path: Path) -> Catalog:
    try:
        data = tomllib.loads(path.read_text())
    except OSError as exc:
        raise CatalogError(f"the AI catalog {path} cannot be read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"the AI catalog {path} is not valid TOML: {exc}") from None
    try:
        return Catalog.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{_where(data, e['loc'])}: {e['msg']}" for e in exc.errors()[:5])
        raise CatalogError(f"the AI catalog {path} is refused: {problems}") from None


def _where(data: dict[str, object], loc: tuple[int | str, ...]) -> str:
    """models[2] (its id) .field, for a person reading the error."""
    if len(loc) >= 2 and loc[0] == "models" and isinstance(loc[1], int):
        models = data.get("models")
        entry = models[loc[1]] if isinstance(models, list) and loc[1] < len(models) else None
        name = entry.get("id") if isinstance(entry, dict) else None
        rest = ".".join(str(p) for p in loc[2:])
        return f"model {loc[1] + 1}" + (f" ({name})" if name else "") + (f": {rest}" if rest else "")
    return ".".join(str(p) for p in loc) or "the file"


@cache
def load(path: Path) -> Catalog:
    """The catalog at `path`, read once per process (it is checked when svc starts: AISettings)."""
    return read(path)
