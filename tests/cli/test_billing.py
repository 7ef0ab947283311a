"""`svc billing status|upgrade|portal|cancel|resume` against a real `svc serve` with the fake Polar
(SVC_BILLING=fake: a real HTTP server in the serving process, its webhooks back over HTTP):
upgrade waits for the payment's webhook, cancel and resume, the portal's link, refusals in words."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx

from tests.cli.conftest import Cli, Result, uniq
from tests.support.wait import WAIT_SECONDS


def test_upgrade_waits_for_the_webhook_then_cancel_resume_portal(billing_server: tuple[str, Path],
                                                                tmp_path: Path) -> None:
    url_, log = billing_server
    assert "billing:   a fake Polar in this process (development; test card 4242 4242 4242 4242)" in log.read_text()
    cli = Cli(url_, tmp_path / "me")
    slug = uniq("paying")
    cli.login(uniq("owner"))
    cli.ok("orgs", "create", slug)
    status = cli.ok("billing", "status", "--org", slug, "--json").json()
    assert (status["plan"], status["enabled"], status["sandbox"]) == ("free", True, True)
    said = cli.ok("billing", "status", "--org", slug).out
    assert f"{slug} is on the free plan (3 projects" in said
    assert said.rstrip().endswith(" mails an hour) [sandbox]."), said  # the fake is a sandbox: said, no " ."
    cli.fails("not_pro", "billing", "cancel", "--org", slug)

    # A checkout to pay (not waited for), then `upgrade` waiting while the payment goes through.
    url = cli.ok("billing", "upgrade", "--org", slug, "--no-browser", "--no-wait", "--json").json()["url"]
    fake = url.split("/checkout/")[0]
    before = {c["id"] for c in httpx.get(f"{fake}/_fake/checkouts", timeout=10).json()["checkouts"]}
    waited: list[Result] = []
    waiting = threading.Thread(target=lambda: waited.append(
        cli("billing", "upgrade", "--org", slug, "--no-browser", "--timeout", str(int(WAIT_SECONDS)), "--json")))
    waiting.start()
    # Paid once the waiting `upgrade` has been answered: the same checkout (one open checkout per
    # org), its billing.checkout event marked reused. Paid before, the org would be pro already when
    # it asks (already_pro), which is right, and not what this test is about.
    deadline = time.monotonic() + WAIT_SECONDS
    def checkouts() -> int:  # in a process of its own: the waiting `upgrade` runs in this one
        listed = cli.process("audit", "list", "--org", slug, "--action", "billing.checkout", "--json")
        return len(listed.json()["events"])

    while checkouts() < 2:
        assert time.monotonic() < deadline and waiting.is_alive(), waited and waited[0].err
        time.sleep(0.2)
    assert {c["id"] for c in httpx.get(f"{fake}/_fake/checkouts", timeout=10).json()["checkouts"]} == before
    paid = httpx.post(url, data={"email": "ada@example.com", "card": "4242 4242 4242 4242"}, timeout=10)
    assert paid.status_code == 303, paid.text
    waiting.join(timeout=2 * WAIT_SECONDS)
    assert waited and waited[0].code == 0, waited and waited[0].err
    assert waited[0].json()["plan"] == "pro"
    assert "renews on" in cli.ok("billing", "status", "--org", slug).out

    cancelled = cli.ok("billing", "cancel", "--org", slug, "--json").json()
    assert cancelled["plan"] == "pro" and cancelled["cancelAtPeriodEnd"] is True
    assert "cancelled at the end of the period" in cli.ok("billing", "status", "--org", slug).out
    resumed = cli.ok("billing", "resume", "--org", slug, "--json").json()
    assert resumed["cancelAtPeriodEnd"] is False
    portal = cli.ok("billing", "portal", "--org", slug, "--no-browser", "--json").json()["url"]
    assert "/portal?token=" in portal and httpx.get(portal, timeout=10).status_code == 200
    cli.fails("already_pro", "billing", "upgrade", "--org", slug, "--no-browser", "--no-wait")
