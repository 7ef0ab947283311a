"""The worker's side of email, end to end on a real `svc serve` (edge, workerd): env.email is in a
granted project's worker env only; a received message is handed to the worker's email() handler
(the stored message and its `email.to_worker` job are written here as the SMTP server writes
them), which reads it, rejects it or throws; and a visitor's request cannot make email() run."""

from __future__ import annotations

import asyncio
import re
import smtplib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from svc.app import server_context
from svc.context import AppContext
from svc.domains.email.kinds import EmailJob
from svc.domains.email.service import raw_key
from svc.domains.workers import queries as worker_queries
from svc.kit.clock import utcnow
from svc.kit.ids import new_id
from svc.models import Job, JobStatus, MailDirection, MailLogEntry, MailOutcome
from svc.models import Project as ProjectRow
from svc.settings import Settings
from svc.uow import Tx, unit_of_work
from tests.support import components
from tests.support.bundles import site
from tests.support.ports import free_port
from tests.support.serve import Server, svc_serve
from tests.support.wait import until
from tests.workers.test_serve import Project, until_steady

pytestmark = components.WORKERD

MAIL_DOMAIN = "mail.svc.test"

WORKER = b"""
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === "/api/env") {
      return Response.json({ bindings: Object.keys(env).sort(), email: typeof env.email,
                             send: env.email ? typeof env.email.send : null });
    }
    if (url.pathname === "/api/send") {
      try {
        return Response.json(await env.email.send(await request.json()));
      } catch (error) {
        return Response.json({ thrown: error.name, code: error.code, status: error.status }, { status: 418 });
      }
    }
    return Response.json({ fetched: url.pathname, method: request.method });
  },
  async email(message, env, ctx) {
    const subject = message.headers.get("subject");
    const body = await new Response(message.raw).text();
    console.log(`email() from=${message.from} to=${message.to} subject=${subject} size=${message.rawSize} ` +
                `read=${body.length} env=${typeof env.email}`);
    if (subject === "reject me") message.setReject("not wanted here");
    if (subject === "throw") throw new Error("thrown in email()");
    if (subject === "hang") await new Promise(() => {});
    if (subject === "forward") {
      const sent = await message.forward("boss@example.com", new Headers({ "X-Forwarded-By": "the worker" }));
      console.log(`forwarded ${sent.id} ${sent.outcome}`);
    }
    if (subject === "reply") {
      const raw = `From: ${message.to}\\r\\nTo: ${message.from}\\r\\nSubject: Re: reply\\r\\n` +
                  `In-Reply-To: ${message.headers.get("message-id")}\\r\\n\\r\\nThanks!\\r\\n`;
      const sent = await message.reply({ raw });
      console.log(`replied ${sent.id} ${sent.outcome}`);
      try {
        await message.reply({ raw: "Subject: not a reply\\r\\n\\r\\nto anyone\\r\\n" });
      } catch (error) {
        console.log(`refused ${error.name} ${error.code}`);
      }
    }
  },
};
"""

NO_HANDLER = b"""export default { fetch() { return new Response("only fetch"); } };"""


@pytest.fixture(scope="module")
async def server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Server]:
    async with svc_serve(tmp_path_factory.mktemp("email-worker"), SVC_WORKER_PROCESSES="1",
                         SVC_WORKER_TIMEOUT_SECONDS="3", SVC_MAIL_DOMAIN=MAIL_DOMAIN,
                         SVC_SMTP_PORT=str(free_port())) as running:
        yield running


@asynccontextmanager
async def store(server: Server) -> AsyncIterator[AppContext]:
    """The running server's store and blob store, reached from here as `svc admin` reaches them."""
    assert server.data_dir is not None
    async with server_context(Settings(data_dir=server.data_dir)) as ctx:
        yield ctx


@dataclass
class Mail:
    id: str
    project_id: str


_owners = iter(range(1000))


@pytest.fixture
async def project(server: Server) -> AsyncIterator[Project]:
    owner = f"mailer{next(_owners)}"
    async with httpx.AsyncClient(base_url=server.api, timeout=30) as http:
        r = await http.post("/v1/auth/dev/login", json={"subject": owner})
        auth = {"authorization": f"Bearer {r.json()['token']}"}
        r = await http.post(f"/v1/orgs/{owner}/projects", json={"name": "site"}, headers=auth)
        assert r.status_code == 201, r.text
        yield Project(server=server, http=http, owner=owner, auth=auth, host=r.json()["hostname"])


async def deploy(project: Project, source: bytes = WORKER) -> None:
    r = await project.deploy(site({"worker/index.js": source}, svc_json={}))
    assert r.status_code == 201, r.text


async def grant(project: Project) -> str:
    r = await project.http.post(f"{project.base}/email", headers=project.auth)
    assert r.status_code == 200, r.text
    return str(r.json()["address"])


async def project_id(project: Project) -> str:
    r = await project.http.get(project.base, headers=project.auth)
    return str(r.json()["id"])


def message(to: str, subject: str, body: str = "Hello from outside.\r\n", message_id: str = "m@example.org") -> bytes:
    return (f"Received: from mx.example.org by svc\r\nFrom: Sender <sender@example.org>\r\nTo: {to}\r\n"
            f"Subject: {subject}\r\nMessage-ID: <{message_id}>\r\n\r\n{body}").encode()


async def receive(project: Project, subject: str, *, attempts: int = 4) -> Mail:
    """A message stored and its job enqueued, in one transaction, as the SMTP server does."""
    pid = await project_id(project)
    async with store(project.server) as ctx:
        address = f"hello@site.{project.owner}.{MAIL_DOMAIN}"
        mail_id = new_id("mail")
        message_id = f"{mail_id}@example.org"
        raw = message(address, subject, message_id=message_id)
        path = Path(project.server.data_dir or ".") / f"{mail_id}.eml"
        path.write_bytes(raw)
        await ctx.blobs.put_file(raw_key(pid, mail_id), path)
        path.unlink()
        async with unit_of_work(ctx, Tx.WRITE) as uow:
            row_project = await uow.session.get(ProjectRow, pid)
            assert row_project is not None
            now = utcnow()
            uow.session.add(MailLogEntry(
                id=mail_id, project_id=pid, org_id=row_project.org_id, direction=MailDirection.inbound,
                from_addr="sender@example.org", to_addr=address, subject=subject, outcome=MailOutcome.received,
                size=len(raw), spf="pass", raw_key=raw_key(pid, mail_id), message_id=message_id, created_at=now,
                updated_at=now))
            uow.enqueue(EmailJob.to_worker, {"mail_id": mail_id}, max_attempts=attempts)
    return Mail(id=mail_id, project_id=pid)


async def row(project: Project, mail_id: str) -> MailLogEntry:
    async with store(project.server) as ctx, ctx.db.transaction(write=False) as session:
        found = await session.get(MailLogEntry, mail_id)
        assert found is not None
        session.expunge(found)
        return found


async def job_status(project: Project, mail_id: str) -> str | None:
    async with store(project.server) as ctx, ctx.db.transaction(write=False) as session:
        jobs = (await session.scalars(select(Job).where(Job.kind == EmailJob.to_worker))).all()
        mine = [j for j in jobs if j.payload.get("mail_id") == mail_id]
        return str(mine[0].status) if mine else None


async def settled(project: Project, mail: Mail) -> MailLogEntry:
    """The message once its job is over (done or failed for good)."""
    async def over() -> bool:
        return await job_status(project, mail.id) in (JobStatus.done, JobStatus.failed)

    await until(over, what=f"the email.to_worker job of {mail.id}")
    return await row(project, mail.id)


async def logs(project: Project) -> list[dict[str, Any]]:
    return list((await project.http.get(f"{project.base}/logs", headers=project.auth)).json()["lines"])


async def env_of(project: Project) -> dict[str, Any]:
    r = await project.get("/api/env")
    assert r.status_code == 200, r.text
    return dict(r.json())


async def test_env_email_is_there_only_with_the_grant(project: Project) -> None:
    await deploy(project)
    before = await env_of(project)
    assert before["email"] == "undefined" and not any("EMAIL" in b for b in before["bindings"])
    await grant(project)
    granted = await env_of(project)
    assert granted["email"] == "object" and granted["send"] == "function"
    assert "email" in granted["bindings"] and "__SVC_EMAIL__" not in granted["bindings"]
    # The steady path (the shard's own process) has it as the loading path has it.
    await until_steady(project)
    assert (await env_of(project))["send"] == "function"
    assert (await project.http.delete(f"{project.base}/email", headers=project.auth)).status_code == 204
    assert (await env_of(project))["email"] == "undefined"


async def test_email_handler_reads_and_handles_a_message(project: Project) -> None:
    await deploy(project)
    address = await grant(project)
    mail = await receive(project, "hi there")
    entry = await settled(project, mail)
    assert entry.outcome == MailOutcome.handled and entry.detail is None

    async def printed() -> dict[str, Any] | None:
        return next((line for line in await logs(project) if line["message"].startswith("email()")), None)

    line = await until(printed, what="the line email() printed")
    assert line["message"] == (f"email() from=sender@example.org to=hello@{address} subject=hi there "
                               f"size={entry.size} read={entry.size} env=object")
    # Its lines are found by the message's id, as a request's are by its own.
    assert line["requestId"] == mail.id


async def test_set_reject_marks_the_message_rejected(project: Project) -> None:
    await deploy(project)
    await grant(project)
    entry = await settled(project, await receive(project, "reject me"))
    assert entry.outcome == MailOutcome.worker_rejected and entry.detail == "not wanted here"


async def test_a_handler_that_throws_is_retried_then_left_received(project: Project) -> None:
    await deploy(project)
    await grant(project)
    # Enqueued as the SMTP server does (the jobs' default attempts, 8): the handoff stops at its own 4
    # (backoff ~2, 4, 8 s between them).
    mail = await receive(project, "throw", attempts=8)
    entry = await settled(project, mail)
    assert entry.outcome == MailOutcome.received
    assert entry.detail is not None and "thrown in email()" in entry.detail and "(4 attempts)" in entry.detail
    assert any(line["message"] == "Error: thrown in email()" and line["requestId"] == mail.id
               for line in await logs(project))


async def test_no_email_export_or_no_worker_leaves_it_received(project: Project) -> None:
    await grant(project)
    no_worker = await settled(project, await receive(project, "nobody home"))
    assert no_worker.outcome == MailOutcome.received and no_worker.detail is None
    await deploy(project, NO_HANDLER)
    no_handler = await settled(project, await receive(project, "only fetch here"))
    assert no_handler.outcome == MailOutcome.received and no_handler.detail is None
    # Revoked after a message came, before its job ran: it is not handed over (mail in and out
    # stopped). (The job is written after the revoke here: what the job finds is the same.)
    await deploy(project)
    assert (await project.http.delete(f"{project.base}/email", headers=project.auth)).status_code == 204
    revoked = await settled(project, await receive(project, "hi there"))
    assert revoked.outcome == MailOutcome.received


def _runtime_config(server: Server) -> tuple[int, int, str, str]:
    """The loading process's ports (the edge's, the control socket) and tokens, from its config."""
    assert server.data_dir is not None
    config = (server.data_dir / "workers" / "serve-0" / "config.capnp").read_text()
    http_port = int(re.search(r'name = "http", address = "127\.0\.0\.1:(\d+)"', config)[1])  # type: ignore[index]
    control_port = int(re.search(r'name = "control", address = "127\.0\.0\.1:(\d+)"', config)[1])  # type: ignore[index]
    token = re.search(r'name = "TOKEN", text = "([^"]+)"', config)[1]  # type: ignore[index]
    control = re.search(r'name = "CONTROL_TOKEN", text = "([^"]+)"', config)[1]  # type: ignore[index]
    return http_port, control_port, token, control


async def test_a_visitor_cannot_reach_the_email_handler(project: Project) -> None:
    await deploy(project)
    await grant(project)
    pid = await project_id(project)
    http_port, control_port, token, control = _runtime_config(project.server)
    forged = {"x-svc-control-token": control, "x-svc-mail-from": "forged@example.org",
              "x-svc-mail-to": "x@y", "x-svc-mail-id": "mail_forged", "content-type": "message/rfc822"}
    async with httpx.AsyncClient(timeout=30) as client:
        # Through the edge, with every header svc's own call sends (the control token itself
        # included): the worker's fetch() answers, never its email().
        r = await client.post(f"http://127.0.0.1:{project.server.edge_port}/email", content=message("x@y", "forged"),
                              headers={"host": project.host, **forged})
        assert r.status_code == 200 and r.json() == {"fetched": "/email", "method": "POST"}, r.text
        # Straight to the socket the edge proxies to, with the edge's token: fetch() again.
        async with store(project.server) as ctx:
            async with ctx.db.transaction(write=False) as session:
                key = (await worker_queries.live_worker_keys(session, pid))[pid]
        r = await client.post(f"http://127.0.0.1:{http_port}/email", content=b"x",
                              headers={**forged, "x-svc-runtime-token": token, "x-svc-worker": key})
        assert r.status_code == 200 and r.json() == {"fetched": "/email", "method": "POST"}, r.text
        # The control socket refuses a call without its own token (the edge's is not it).
        bare = {k: v for k, v in forged.items() if k != "x-svc-control-token"} | {"x-svc-worker": key}
        for wrong in (None, token, control[:-1]):
            r = await client.post(f"http://127.0.0.1:{control_port}/email", content=b"x",
                                  headers=bare | ({"x-svc-control-token": wrong} if wrong else {}))
            assert r.status_code == 403 and r.json()["code"] == "forbidden", r.text
        # The steady socket (the project's own) serves the worker's default entrypoint only, too.
        await until_steady(project)

        async def answered() -> httpx.Response | None:
            # A process just started on a loaded machine may miss the module's 3 s bound once:
            # what is asserted is whose handler answers, never email().
            got = await client.post(f"http://127.0.0.1:{project.server.edge_port}/email", content=b"x",
                                    headers={"host": project.host, **forged})
            return got if got.status_code < 500 else None

        r = await until(answered, what="the steady process's answer")
        assert r.status_code == 200 and r.json() == {"fetched": "/email", "method": "POST"}, r.text
    assert not any(line["message"].startswith("email()") for line in await logs(project))


async def test_env_email_send_queues_a_message(project: Project) -> None:
    await deploy(project)
    address = await grant(project)
    sent = await _post(project, "/api/send", {"to": "friend@example.com", "subject": "From the worker",
                                              "text": "Hello, friend.", "from": "hello", "replyTo": "me@example.org"})
    assert sent.status_code == 200, sent.text
    assert sent.json()["outcome"] == "queued" and sent.json()["id"].startswith("mail")
    entry = (await project.http.get(f"{project.base}/email/log/{sent.json()['id']}", headers=project.auth)).json()
    assert entry["direction"] == "out" and entry["to"] == "friend@example.com" and entry["subject"] == "From the worker"
    assert entry["from"] == f"hello@{address}"

    async def went_out() -> bool:
        got = await project.http.get(f"{project.base}/email/log/{sent.json()['id']}", headers=project.auth)
        return bool(got.json()["outcome"] == "sent")

    await until(went_out, what="the message sent (to the .eml directory: no relay here)")
    raw = (await project.http.get(f"{project.base}/email/log/{sent.json()['id']}/raw", headers=project.auth)).content
    assert b"DKIM-Signature:" in raw and b"Hello, friend." in raw and b"Reply-To: me@example.org" in raw
    # svc's refusals reach the worker as an EmailError with svc's code.
    bad = await _post(project, "/api/send", {"to": ["friend@example.com"], "subject": "no body"})
    assert bad.status_code == 418 and bad.json() == {"thrown": "EmailError", "code": "bad_request", "status": 400}


async def test_the_runtime_route_is_the_runtimes_and_checks_the_grant(project: Project) -> None:
    pid = await project_id(project)
    _, _, token, control = _runtime_config(project.server)
    url = f"{project.server.api}/v1/runtime/projects/{pid}/email/send"
    body = {"to": ["friend@example.com"], "subject": "s", "text": "t"}
    async with httpx.AsyncClient(timeout=30) as client:
        for wrong in (None, control, token[:-1]):
            r = await client.post(url, json=body, headers={"x-svc-runtime-token": wrong} if wrong else {})
            assert r.status_code == 403 and r.json()["code"] == "forbidden", r.text
        # Not granted (a worker that kept its env.email past a revoke would be told so).
        r = await client.post(url, json=body, headers={"x-svc-runtime-token": token})
        assert r.status_code == 403 and r.json()["code"] == "email_not_granted", r.text
        # forward() names a received message of this project only.
        await grant(project)
        r = await client.post(url.replace("/send", "/forward"), json={"mailId": "mail_nope", "to": "a@b.c"},
                              headers={"x-svc-runtime-token": token})
        assert r.status_code == 404, r.text
        mail = await receive(project, "a message")
        r = await client.post(url.replace("/send", "/forward"),
                              json={"mailId": mail.id, "to": "a@b.c", "headers": [["Bcc", "x@y.z"]]},
                              headers={"x-svc-runtime-token": token})
        assert r.status_code == 400 and "X-* headers only" in r.json()["message"], r.text


async def test_forward_sends_the_message_on(project: Project) -> None:
    await deploy(project)
    await grant(project)
    mail = await receive(project, "forward")
    entry = await settled(project, mail)
    assert entry.outcome == MailOutcome.handled, entry.detail

    async def forwarded() -> str | None:
        line = next((x for x in await logs(project) if x["message"].startswith("forwarded ")), None)
        return str(line["message"]) if line else None

    said = await until(forwarded, what="the worker's line about the forward")
    out_id, outcome = said.split()[1:]
    assert outcome == "queued"
    out = (await project.http.get(f"{project.base}/email/log/{out_id}", headers=project.auth)).json()
    assert out["direction"] == "out" and out["to"] == "boss@example.com" and out["subject"] == "forward"
    raw = (await project.http.get(f"{project.base}/email/log/{out_id}/raw", headers=project.auth)).content
    assert b"X-Forwarded-By: the worker\r\n" in raw and b"Hello from outside." in raw


async def _post(project: Project, path: str, body: object) -> httpx.Response:
    async with httpx.AsyncClient(timeout=30) as client:
        return await client.post(f"http://127.0.0.1:{project.server.edge_port}{path}", json=body,
                                 headers={"host": project.host})


async def test_reply_answers_the_sender(project: Project) -> None:
    await deploy(project)
    address = await grant(project)
    mail = await receive(project, "reply")
    entry = await settled(project, mail)
    assert entry.outcome == MailOutcome.handled, entry.detail

    async def said(prefix: str) -> str | None:
        line = next((x for x in await logs(project) if x["message"].startswith(prefix)), None)
        return str(line["message"]) if line else None

    replied = await until(lambda: said("replied "), what="the worker's reply")
    out_id, outcome = replied.split()[1:]
    out = (await project.http.get(f"{project.base}/email/log/{out_id}", headers=project.auth)).json()
    assert outcome == "queued" and out["to"] == "sender@example.org" and out["from"] == f"hello@{address}"
    assert out["subject"] == "Re: reply"
    # A "reply" that names no message it answers is refused.
    assert await until(lambda: said("refused ")) == "refused EmailError bad_request"


async def test_past_the_hourly_cap_env_email_throws_rate_limited(project: Project) -> None:
    await deploy(project)
    await grant(project)
    pid = await project_id(project)
    async with store(project.server) as ctx, unit_of_work(ctx, Tx.WRITE) as uow:
        owner = await uow.session.get(ProjectRow, pid)
        assert owner is not None
        now = utcnow()
        for _ in range(100):  # the free plan's cap, sent this hour
            uow.session.add(MailLogEntry(
                id=new_id("mail"), project_id=pid, org_id=owner.org_id, direction=MailDirection.outbound,
                from_addr="noreply@x", to_addr="a@example.com", subject="s", outcome=MailOutcome.sent, size=1,
                created_at=now, updated_at=now))
    over = await _post(project, "/api/send", {"to": "friend@example.com", "subject": "one more", "text": "t"})
    assert over.status_code == 418 and over.json() == {"thrown": "EmailError", "code": "rate_limited", "status": 429}


async def test_a_handler_that_never_finishes_is_left_received(project: Project) -> None:
    await deploy(project)
    await grant(project)
    entry = await settled(project, await receive(project, "hang", attempts=1))
    assert entry.outcome == MailOutcome.received and entry.detail is not None
    assert entry.detail.startswith("the worker's email() failed (1 attempt): ") and "hung" in entry.detail


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mailbox" / "worker" / "index.js"


async def test_the_mailbox_example_answers_mail_sent_over_smtp(project: Project) -> None:
    """The whole loop, as a user of examples/mailbox sees it: a message sent to svc's SMTP server
    reaches the worker's email(), whose reply goes out, both in the project's log."""
    await deploy(project, EXAMPLE.read_bytes())
    address = await grant(project)
    config = (await project.http.get("/v1/config")).json()
    raw = message(f"hello@{address}", "Are you there?", message_id="ask@example.org")

    def send() -> None:
        with smtplib.SMTP("127.0.0.1", config["smtpPort"], timeout=30) as smtp:
            smtp.sendmail("sender@example.org", [f"hello@{address}"], raw)

    await asyncio.to_thread(send)

    async def both() -> list[dict[str, Any]] | None:
        r = await project.http.get(f"{project.base}/email/log", headers=project.auth)
        entries = list(r.json()["entries"])
        done = {e["direction"]: e for e in entries}
        return entries if done.get("in", {}).get("outcome") == "handled" and "out" in done else None

    entries = await until(both, what="the message handled and its reply sent")
    received = next(e for e in entries if e["direction"] == "in")
    reply = next(e for e in entries if e["direction"] == "out")
    assert received["spf"] is not None and received["hasRaw"] is True
    assert reply["to"] == "sender@example.org" and reply["from"] == f"hello@{address}"
    assert reply["subject"] == "Re: Are you there?"
