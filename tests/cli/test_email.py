"""`svc email ...` against a real `svc serve` with a mail domain: status before a grant, grant and
revoke (asking first), the log as a table newest first with its filter and pages, one message,
its raw bytes to stdout and to a file, `--follow` printing messages as they are logged, `--json`
everywhere and refusals with the server's code. The log's rows (and a raw message) are written
straight into the server's store, as inbound and outbound mail will write them."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from svc.kit.clock import utcnow
from tests.cli.conftest import SVC, Cli, running_server, uniq
from tests.support import mail_rows
from tests.support.wait import WAIT_SECONDS, until_sync

MAIL_DOMAIN = "mail.svc.test"
RAW = b"From: ann@example.com\r\nTo: hi@site.x.mail.svc.test\r\nSubject: first\r\n\r\nhello\r\n"


@dataclass
class MailServer:
    url: str
    data: Path


@pytest.fixture(scope="module")
def mail_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MailServer]:
    work = tmp_path_factory.mktemp("svc-email")
    with running_server(work, mail_domain=MAIL_DOMAIN) as url:
        yield MailServer(url, work / "data")


def add_mail(server: MailServer, org: str, project: str, n: int, *, start: datetime | None = None,
             raw: bytes | None = None) -> list[str]:
    return mail_rows.add_mail(server.data, org, project, n, domain=MAIL_DOMAIN, start=start, raw=raw)


def _team(mail_server: MailServer, home: Path) -> tuple[Cli, Cli, str, tuple[str, ...]]:
    """An owner with a project "site" and a member of the org."""
    owner, member = Cli(mail_server.url, home / "owner"), Cli(mail_server.url, home / "member")
    org = uniq("mail")
    owner.login(uniq("owner"))
    subject = uniq("member")
    member.login(subject)
    owner.ok("orgs", "create", org)
    owner.ok("projects", "create", "site", "--org", org)
    owner.ok("members", "add", org, subject, "--role", "member")
    return owner, member, org, ("--project", "site", "--org", org)


def test_status_grant_revoke_and_refusals(mail_server: MailServer, tmp_path: Path) -> None:
    owner, member, org, where = _team(mail_server, tmp_path)
    address = f"site.{org}.{MAIL_DOMAIN}"
    before = owner.ok("email", "status", *where, "--json").json()
    assert before == {"granted": False, "address": address, "sender": f"noreply@{address}", "hourlyCap": 100,
                      "sent24h": 0, "received24h": 0}
    assert "svc email grant" in owner.ok("email", "status", *where).out

    granted = member.ok("email", "grant", *where, "--json").json()
    assert granted == before | {"granted": True}
    said = member.ok("email", "grant", *where).out  # again: idempotent, the same address
    assert f"receives mail at any address @{address}" in said and f"sends as noreply@{address}" in said

    # A member may not revoke: the server's code and words.
    refused = member.fails("forbidden", "email", "revoke", *where, "--yes")
    assert "error: " in refused.err
    # Revoke asks first; no is no.
    owner.fails("cancelled", "email", "revoke", *where, input="n\n")
    assert owner.ok("email", "status", *where, "--json").json()["granted"] is True
    owner.fails("confirm_needed", "email", "revoke", *where, "--json")
    assert "no longer receives or sends mail" in owner.ok("email", "revoke", *where, input="y\n").out
    assert owner.ok("email", "status", *where, "--json").json()["granted"] is False
    assert owner.ok("email", "revoke", *where, "--yes", "--json").json() == {"project": "site", "granted": False}

    # Bad input is refused before anything is asked of the server, or by it.
    owner.fails("bad_request", "email", "log", *where, "--direction", "sideways")
    owner.fails("bad_request", "email", "send", *where, "--to", "a@example.com", "--subject", "s")
    owner.fails("not_found", "email", "show", "mail_nope", *where)
    owner.fails("not_found", "email", "status", "--project", "nope", "--org", org)


def test_log_pages_show_and_raw(mail_server: MailServer, tmp_path: Path) -> None:
    owner, _, org, where = _team(mail_server, tmp_path)
    assert "No mail in site's log." in owner.ok("email", "log", *where).out
    ids = add_mail(mail_server, org, "site", 5, raw=RAW)

    # Newest first, in pages by cursor.
    first = owner.ok("email", "log", *where, "--limit", "2", "--json").json()
    assert [e["id"] for e in first["entries"]] == ids[:-3:-1] and first["nextCursor"]
    seen, cursor = [], None
    while True:
        extra = ("--cursor", cursor) if cursor else ()
        page = owner.ok("email", "log", *where, "--limit", "2", *extra, "--json").json()
        seen += [e["id"] for e in page["entries"]]
        cursor = page["nextCursor"]
        if not cursor:
            break
    assert seen == ids[::-1]
    table = owner.ok("email", "log", *where, "--limit", "2", env=owner.env(COLUMNS="200")).out
    assert table.index(ids[4]) < table.index(ids[3]) and ids[2] not in table
    assert "WHEN" in table and "OUTCOME" in table and "message 4" in table
    assert f"More: svc email log --cursor {first['nextCursor']}" in table
    inbound = owner.ok("email", "log", *where, "--direction", "in", "--json").json()["entries"]
    assert [e["id"] for e in inbound] == [ids[4], ids[2], ids[0]]

    entry = owner.ok("email", "show", ids[0], *where, "--json").json()
    assert entry["hasRaw"] is True and entry["spf"] == "pass" and entry["subject"] == "message 0"
    shown = owner.ok("email", "show", ids[0], *where).out
    assert "ann@example.com" in shown and "received" in shown and f"svc email raw {ids[0]}" in shown
    assert "not kept" in owner.ok("email", "show", ids[1], *where).out

    # The raw message: its bytes on stdout, or in a file.
    assert owner.ok("email", "raw", ids[0], *where).out.encode() == RAW
    target = tmp_path / "first.eml"
    wrote = owner.ok("email", "raw", ids[0], *where, "-o", str(target), "--json").json()
    assert wrote == {"id": ids[0], "file": str(target), "size": len(RAW)} and target.read_bytes() == RAW
    owner.fails("not_found", "email", "raw", ids[1], *where)  # no raw copy kept
    owner.fails("bad_request", "email", "raw", ids[0], *where, "--json")  # JSON and the bytes: not both


def _lines(proc: subprocess.Popen[str]) -> queue.Queue[str]:
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return lines


def _take(lines: queue.Queue[str], n: int) -> list[dict[str, Any]]:
    return [json.loads(lines.get(timeout=WAIT_SECONDS)) for _ in range(n)]


def test_follow_prints_new_messages_as_they_are_logged(mail_server: MailServer, tmp_path: Path) -> None:
    """A real process: --follow runs until Ctrl-C (SIGINT), which ends it cleanly."""
    owner, _, org, where = _team(mail_server, tmp_path)
    old = add_mail(mail_server, org, "site", 3)
    proc = subprocess.Popen([SVC, "email", "log", *where, "--limit", "2", "--follow", "--json"], env=owner.env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = _lines(proc)
        # The latest two, oldest first.
        assert [e["id"] for e in _take(lines, 2)] == old[1:]
        # A burst bigger than a page of the API's, then one more: each once, in order.
        new = add_mail(mail_server, org, "site", 205, start=utcnow())
        assert [e["id"] for e in _take(lines, 205)] == new
        last = add_mail(mail_server, org, "site", 1, start=utcnow() + timedelta(seconds=300))
        assert [e["id"] for e in _take(lines, 1)] == last
        assert lines.empty()
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=WAIT_SECONDS)
    assert proc.returncode == 0, err


def test_send_and_records(mail_server: MailServer, tmp_path: Path) -> None:
    """A quick test send from the project's address goes out (here as an .eml file under the data
    directory: no relay) and shows in the log; the records to publish (svc does not serve the mail
    domain's zone here)."""
    owner, member, org, where = _team(mail_server, tmp_path)
    address = f"site.{org}.{MAIL_DOMAIN}"
    member.fails("email_not_granted", "email", "send", *where, "--to", "bob@example.com", "--subject", "hi",
                 "--text", "hello")
    member.ok("email", "grant", *where)
    sent = member.ok("email", "send", *where, "--to", "bob@example.com", "--to", "cy@example.com", "--subject",
                     "Hello there", "--text", "hello", "--from", "team", "--json").json()
    assert sent["direction"] == "out" and sent["from"] == f"team@{address}" and sent["subject"] == "Hello there"
    assert "bob@example.com" in sent["to"] and "cy@example.com" in sent["to"]
    said = member.ok("email", "send", *where, "--to", "bob@example.com", "--subject", "again", "--html",
                     "<p>hi</p>").out
    assert said.startswith("Message mail_") and "svc email show" in said
    member.fails("bad_request", "email", "send", *where, "--to", "not an address", "--subject", "x", "--text", "y")

    def delivered() -> dict[str, Any] | None:
        entry = member.ok("email", "show", sent["id"], *where, "--json").json()
        return entry if entry["outcome"] == "sent" else None

    entry = until_sync(delivered)
    assert entry["hasRaw"] is True
    raw = member.ok("email", "raw", sent["id"], *where).out
    assert "Subject: Hello there" in raw and "DKIM-Signature:" in raw and f"team@{address}" in raw
    assert [e["id"] for e in member.ok("email", "log", *where, "--direction", "out", "--json").json()["entries"]][
        -1] == sent["id"]

    shown = owner.ok("email", "records", *where, "--json").json()
    assert shown["published"] is False
    assert {(r["name"], r["type"]) for r in shown["records"]} >= {(f"*.{MAIL_DOMAIN}", "MX"),
                                                                    (f"_dmarc.{MAIL_DOMAIN}", "TXT")}
    dkim = next(r for r in shown["records"] if "._domainkey." in r["name"])
    text = owner.ok("email", "records", *where).out
    assert "Publish these records" in text and dkim["content"] in text.replace("\n", "")
