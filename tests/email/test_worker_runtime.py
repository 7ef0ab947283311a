"""The runtime's side of email() alone (adapters/workers deliver_email on a real workerd, svc played
by tests/workers' fake): the message as a worker sees it (a folded header unfolded, the raw bytes,
the envelope), a WorkerEntrypoint class's email(), a worker without one, one that throws, and an
unknown worker."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from svc.adapters.workers.port import InboundEmail, RuntimeUnavailable, WorkerFailed
from svc.adapters.workers.workerd import WorkerdRuntime
from tests.support import components
from tests.workers.test_runtime import FakeSvc, fake_svc, runtime

__all__ = ["fake_svc", "runtime"]  # the fixtures, used here by name

pytestmark = components.WORKERD

RAW = (b"From: A <a@example.org>\r\nSubject: a subject\r\n folded on\r\nX-Tag: one\r\nX-Tag: two\r\n"
       b"Message-ID: <id-1@example.org>\r\n\r\nThe body\r\n")

OBJECT = """export default {
  fetch() { return new Response("fetch"); },
  async email(message, env, ctx) {
    const raw = await new Response(message.raw).text();
    console.log(JSON.stringify({ from: message.from, to: message.to, subject: message.headers.get("subject"),
                                 tags: message.headers.get("x-tag"), size: message.rawSize, raw,
                                 again: (await new Response(message.raw).text()).length,
                                 env: Object.keys(env).sort() }));
    if (message.headers.get("subject") === "boom") throw new TypeError("no good");
  },
};"""

CLASS = """import { WorkerEntrypoint } from "cloudflare:workers";
export default class extends WorkerEntrypoint {
  fetch() { return new Response("fetch"); }
  email(message) { message.setReject(`no thanks, ${this.env.GREETING}`); }
}"""


def mail(raw: bytes = RAW, mail_id: str = "mail_1") -> InboundEmail:
    return InboundEmail(mail_id=mail_id, sender="a@example.org", recipients="hi@site.acme.mail.test", raw=raw)


async def logged(fake: FakeSvc, request_id: str) -> list[dict[str, Any]]:
    for _ in range(200):
        lines = [line for line in fake.logs if line.get("requestId") == request_id]
        if lines:
            return lines
        await asyncio.sleep(0.05)
    raise AssertionError(f"nothing logged for {request_id}")


async def test_the_message_as_email_sees_it(runtime: WorkerdRuntime, fake_svc: FakeSvc) -> None:
    fake_svc.add("obj.1", OBJECT, text={"GREETING": "hi"}, project="p-mail")
    verdict = await runtime.deliver_email("p-mail", "obj.1", mail())
    assert (verdict.outcome, verdict.reason) == ("handled", None)
    seen = json.loads((await logged(fake_svc, "mail_1"))[0]["message"])
    assert seen == {"from": "a@example.org", "to": "hi@site.acme.mail.test", "subject": "a subject folded on",
                    "tags": "one, two", "size": len(RAW), "raw": RAW.decode(), "again": len(RAW),
                    "env": ["GREETING"]}


async def test_a_class_handler_rejects(runtime: WorkerdRuntime, fake_svc: FakeSvc) -> None:
    fake_svc.add("cls.1", CLASS, text={"GREETING": "friend"}, project="p-cls")
    verdict = await runtime.deliver_email("p-cls", "cls.1", mail(mail_id="mail_2"))
    assert (verdict.outcome, verdict.reason) == ("rejected", "no thanks, friend")


async def test_no_handler_a_throw_and_an_unknown_worker(runtime: WorkerdRuntime, fake_svc: FakeSvc) -> None:
    fake_svc.add("plain.1", "export default { fetch() { return new Response('x'); } };", project="p-plain")
    assert (await runtime.deliver_email("p-plain", "plain.1", mail())).outcome == "no_handler"
    fake_svc.add("obj.2", OBJECT, project="p-boom")
    with pytest.raises(WorkerFailed, match="TypeError: no good"):
        await runtime.deliver_email("p-boom", "obj.2", mail(b"Subject: boom\r\n\r\nx\r\n", mail_id="mail_3"))
    assert any(line["message"] == "TypeError: no good" and line.get("stack") for line in
               await logged(fake_svc, "mail_3"))
    with pytest.raises(RuntimeUnavailable):
        await runtime.deliver_email("p-none", "nobody.1", mail())
