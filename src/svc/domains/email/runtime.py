"""A project's worker and its mail (docs/email.md, "The worker: env.email and email()"). Services
flush, never commit.

env.email is a binding to the runtime's Email entrypoint (adapters/workers/dispatcher.js), given
to a granted project's worker; its calls come back here over the runtime's own routes
(runtime_router.py, proved by the runtime's token), with the project named by svc in the
binding's props, never by the worker. What they send goes through the outbound service
(outbound.py) as the API's sends do: the grant, the plan's hourly cap and the suppression list
apply the same."""

from __future__ import annotations

import asyncio
import email.policy
import os
import re
import tempfile
from email.parser import BytesHeaderParser
from pathlib import Path
from typing import Any

from svc.adapters.blobs.port import BlobMissing
from svc.adapters.workers.port import EntrypointBinding
from svc.context import AppContext
from svc.domains.email import errors, outbound, queries, schemas
from svc.domains.projects import service as projects
from svc.errors import BadRequest, NotFound
from svc.kit.store_session import StoreSession
from svc.models import MailDirection, MailLogEntry, Project
from svc.uow import Tx, UnitOfWork, use_case

BINDING = "__SVC_EMAIL__"
ENTRYPOINT = "Email"

# message.forward()'s added headers: X-* only (as Cloudflare's Email Workers allow), a few, short.
FORWARD_HEADER = re.compile(r"^X-[A-Za-z0-9-]{1,70}$", re.IGNORECASE)
MAX_FORWARD_HEADERS = 20
MAX_FORWARD_VALUE = 998
MAX_FORWARD_RCPTS = 50


async def worker_env(session: StoreSession, ctx: AppContext, project: Project) -> dict[str, Any]:
    """env.email for a granted project (the area's manifest declares it): a binding to the
    runtime's Email entrypoint, which sends the worker's calls to svc's runtime routes. A grant or
    a revoke bumps the project's bindings generation: the running worker has it (or loses it) at
    its next request."""
    if await queries.grant(session, project.id) is None:
        return {}
    return {BINDING: EntrypointBinding(entrypoint=ENTRYPOINT, props={"project": project.id})}


async def project_of(uow: UnitOfWork, project_id: str) -> Project:
    project = await projects.project_by_id(uow.session, project_id)
    if project is None:
        raise NotFound("No such project")
    return project


def _temp_file() -> Path:
    fd, name = tempfile.mkstemp(prefix="svc-mail-", suffix=".eml")
    os.close(fd)
    return Path(name)


async def read_raw(ctx: AppContext, key: str) -> bytes:
    """A stored message's bytes (BlobMissing when the blob store lost them). Messages are bounded
    by the SMTP server's size limit: whole in memory is fine."""
    path = await asyncio.to_thread(_temp_file)
    try:
        await ctx.blobs.get_to_file(key, path)
        return await asyncio.to_thread(path.read_bytes)
    finally:
        await asyncio.to_thread(path.unlink, True)


def forward_headers(given: object) -> bytes:
    """message.forward()'s headers as lines to put above the message's own: [[name, value], ...],
    X-* names only, values on one line."""
    if given is None:
        return b""
    if not isinstance(given, list) or len(given) > MAX_FORWARD_HEADERS:
        raise BadRequest(f"headers: at most {MAX_FORWARD_HEADERS} [name, value] pairs")
    lines = []
    for pair in given:
        if (not isinstance(pair, list) or len(pair) != 2 or not all(isinstance(v, str) for v in pair)):
            raise BadRequest("headers: each is a [name, value] pair of strings")
        name, value = pair
        if not FORWARD_HEADER.fullmatch(name):
            raise BadRequest(f"headers: {name[:80]!r} cannot be added; forward() adds X-* headers only")
        if len(value) > MAX_FORWARD_VALUE or any(c in value for c in "\r\n\0"):
            raise BadRequest(f"headers: the value of {name} is one line of at most {MAX_FORWARD_VALUE} characters")
        # A Headers hands its names in lower case: written as mail's headers are usually spelled.
        name = "-".join(part[:1].upper() + part[1:] for part in name.split("-"))
        lines.append(f"{name}: {value}\r\n".encode())
    return b"".join(lines)


def recipients(given: object) -> list[str]:
    rcpts = [given] if isinstance(given, str) else given
    if (not isinstance(rcpts, list) or not 1 <= len(rcpts) <= MAX_FORWARD_RCPTS
            or not all(isinstance(r, str) and "@" in r and len(r) <= 320 and not any(c in r for c in "\r\n <>,")
                       for r in rcpts)):
        raise BadRequest(f"to: 1 to {MAX_FORWARD_RCPTS} addresses")
    return list(rcpts)


_MESSAGE_IDS = re.compile(r"<([^<>\s]+)>")


@use_case(Tx.WRITE)
async def reply(uow: UnitOfWork, project_id: str, mail_id: str, raw: bytes) -> MailLogEntry:
    """message.reply(): the worker's reply to a received message, sent to its envelope's sender
    only, from the local part it was received at. As Cloudflare asks, the reply names the message
    in In-Reply-To (a worker cannot use reply() to write to anyone else)."""
    project = await project_of(uow, project_id)
    row = await queries.entry(uow.session, project.id, mail_id)
    if row is None or row.direction != MailDirection.inbound:
        raise errors.MailNotFound()
    if not row.from_addr or "@" not in row.from_addr:
        raise BadRequest("The message has no sender to reply to (a bounce's sender is empty)")
    headers = BytesHeaderParser(policy=email.policy.compat32).parsebytes(raw)
    answering = set(_MESSAGE_IDS.findall(str(headers.get("In-Reply-To") or "")))
    if row.message_id and row.message_id not in answering:
        raise BadRequest(f"A reply names the message it answers: In-Reply-To: <{row.message_id}>")
    local = row.to_addr.split(",")[0].strip().rpartition("@")[0]
    return await outbound.send_raw(uow, project, rcpts=[row.from_addr], raw=raw,
                                   from_local=local if len(local) <= 64 and schemas.LOCAL_PART.match(local) else None)


@use_case(Tx.READ_THEN_WRITE)  # the raw message is read from the blob store with nothing of the store held
async def forward(uow: UnitOfWork, project_id: str, mail_id: str, to: object, headers: object) -> MailLogEntry:
    """message.forward() of a received message: its raw bytes (with X-* headers added) sent on to
    `to` as they are, through the outbound service (the grant and the cap apply)."""
    rcpts, extra = recipients(to), forward_headers(headers)
    project = await project_of(uow, project_id)
    row = await queries.entry(uow.session, project.id, mail_id)
    if row is None or row.direction != MailDirection.inbound:
        raise errors.MailNotFound()
    if row.raw_key is None:
        raise errors.RawMissing()
    key = row.raw_key
    await uow.close_reads()
    try:
        raw = await read_raw(uow.ctx, key)
    except BlobMissing:
        raise errors.RawMissing() from None
    await uow.begin_write()
    project = await project_of(uow, project_id)
    return await outbound.send_raw(uow, project, rcpts=rcpts, raw=extra + raw)
