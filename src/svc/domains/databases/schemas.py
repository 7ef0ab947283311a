from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, StringConstraints

from svc.domains.operations.schemas import Operation
from svc.kit.api import ApiInput, ApiModel, Timestamp

MAX_TOKEN_MINUTES = 10_080  # a week (decisions.md)


class DatabaseState(ApiModel):
    db: bool = Field(description="Whether the project has a database")


class DatabaseEndpointView(ApiModel):
    """Where to connect, without credentials."""

    host: str
    port: int
    database: str
    sslmode: str


class DatabaseConnect(DatabaseEndpointView):
    """Credentials and where to connect. The password is the project's role's: served by
    /connect and the create response only."""

    user: str
    password: str


class TokenCreate(ApiInput):
    expires_in_minutes: int = Field(default=60, ge=1, le=MAX_TOKEN_MINUTES,
                                    description="How long the token user may log in (1 to 10080 minutes)")


class DatabaseToken(ApiModel):
    """A token user as created: the password is shown this once; svc keeps none of it."""

    user: str
    password: str
    expires_at: Timestamp


class TokenMeta(ApiModel):
    user: str
    expires_at: Timestamp
    created_at: Timestamp


class TokenList(ApiModel):
    tokens: list[TokenMeta]


class GenerationView(ApiModel):
    """A generation (decisions.md's fields, and whether a scratch restore proved it)."""

    epoch: int
    seq: int
    bytes: int
    sha256: str
    offsite_key: str = Field(description="Its key in the blob store")
    created_at: Timestamp
    kind: str = Field(description="scheduled, manual (back up now), pre_restore (what a restore replaced) or final "
                                  "(kept after delete)")
    verified: bool | None = Field(description="null until its restore check ran")
    restore_seconds: float | None


class Generations(ApiModel):
    generations: list[GenerationView]
    last_checked_at: Timestamp | None = Field(description="When the last change check ran (null: never)")


class RestoreRequest(ApiInput):
    epoch: int = Field(ge=1, le=2**31 - 1)
    seq: int = Field(ge=1, le=2**31 - 1)


class DeleteRequest(ApiInput):
    confirm: Annotated[str, StringConstraints(max_length=64)]


class GenerationRef(ApiModel):
    epoch: int
    seq: int


class DatabaseOperation(Operation):
    """An operation on a project's database (the spec's Operation), and what svc adds: the
    generation it works on (a restore's chosen one; a backup's, once taken) and why it failed."""

    generation: GenerationRef | None = Field(default=None, description="A restore's chosen generation; a "
                                             "backup's, once taken (null before)")
    error: str | None = Field(default=None, description="Why it failed, in words (null unless failed)")

    @classmethod
    def of(cls, op: Any) -> DatabaseOperation:
        data = op.data or {}
        ref = GenerationRef(epoch=int(data["epoch"]), seq=int(data["seq"])) if "seq" in data else None
        return cls(id=op.id, project_id=op.project_id, kind=op.kind, phase=op.phase, terminal_code=op.terminal_code,
                   created_at=op.created_at, finished_at=op.finished_at, generation=ref, error=op.error)


class DatabaseExport(ApiModel):
    key: str = Field(description="The diagnostic image's key in the blob store")


# --- env.db (the runtime's calls; not in the OpenAPI document) ---

SqlText = Annotated[str, StringConstraints(min_length=1, max_length=1_000_000)]


class RuntimeQuery(ApiInput):
    """One call of env.db: a statement (`query`), or a transaction's begin, commit or rollback."""

    op: str = Field(pattern="^(query|begin|commit|rollback)$")
    sql: SqlText | None = None
    params: list[Any] = Field(default_factory=list, max_length=10_000)
    tx: Annotated[str, StringConstraints(max_length=64)] | None = None
