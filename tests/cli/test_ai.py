"""`svc ai ...` against a real `svc serve` with the fake Polar and the fake AI model in its process:
the catalog, a project's grant and caps, buying credit (topup waits for the payment's webhook),
auto top-up's consent, the ledger, `--json` everywhere and bad input refused in words."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx

from tests.cli.conftest import Cli, Result, uniq
from tests.support.wait import WAIT_SECONDS


def _pay_when_open(fake: str, cents: int) -> None:
    """The person paying at the checkout `svc ai topup` opened (the fake lists its checkouts)."""
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        open_ = [c for c in httpx.get(f"{fake}/_fake/checkouts", timeout=10).json()["checkouts"]
                 if c["status"] == "open" and c["credit"] and c["amount"] == cents]
        if open_:
            paid = httpx.post(open_[-1]["url"], data={"email": "ada@example.com", "card": "4242 4242 4242 4242"},
                              timeout=10)
            assert paid.status_code == 303, paid.text
            return
        time.sleep(0.1)
    raise AssertionError("svc ai topup opened no checkout")


def test_models_grant_topup_autotopup_and_the_ledger(billing_server: tuple[str, Path], tmp_path: Path) -> None:
    url_, log = billing_server
    assert "ai:        frontier lane on a fake upstream in this process" in log.read_text()
    cli = Cli(url_, tmp_path / "me")
    slug = uniq("ai")
    cli.login(uniq("owner"))
    cli.ok("orgs", "create", slug)
    cli.ok("projects", "create", "bot", "--org", slug)
    where = ("--project", "bot", "--org", slug)

    models = cli.ok("ai", "models", "--json").json()["models"]
    assert "openai/gpt-4o-mini" in {m["id"] for m in models}
    assert "openai/gpt-4o-mini" in cli.ok("ai", "models").out and "$0.15/M" in cli.ok("ai", "models").out

    assert cli.ok("ai", "status", *where, "--json").json()["granted"] is False
    assert "svc ai grant" in cli.ok("ai", "status", *where).out
    granted = cli.ok("ai", "grant", *where, "--json").json()
    assert granted["granted"] is True and granted["maxOutputTokens"] == 4096
    assert "may call env.ai" in cli.ok("ai", "grant", *where).out  # again: idempotent

    credit = cli.ok("ai", "credit", "--org", slug, "--json").json()
    assert credit["balanceMicroCents"] == 0 and credit["hasPaymentMethod"] is False
    assert "svc ai topup 5" in cli.ok("ai", "credit", "--org", slug).out
    cli.fails("no_payment_method", "ai", "autotopup", "on", "--threshold", "2", "--amount", "5", "--org", slug)
    cli.fails("bad_request", "ai", "topup", "7", "--org", slug, "--no-browser", "--no-wait")  # not a tier
    cli.fails("bad_request", "ai", "topup", "five", "--org", slug, "--no-browser", "--no-wait")

    # Buying $20: topup opens the checkout and waits while the payment goes through.
    first = cli.ok("ai", "topup", "5", "--org", slug, "--no-browser", "--no-wait", "--json").json()
    fake = first["url"].split("/checkout/")[0]
    waited: list[Result] = []
    waiting = threading.Thread(target=lambda: waited.append(
        cli("ai", "topup", "$20", "--org", slug, "--no-browser", "--timeout", "60", "--json")))
    waiting.start()
    _pay_when_open(fake, 2000)
    waiting.join(timeout=90)
    assert waited and waited[0].code == 0, waited and waited[0].err
    assert waited[0].json()["balanceMicroCents"] == 2_000_000_000 and waited[0].json()["hasPaymentMethod"] is True

    auto = cli.ok("ai", "autotopup", "on", "--threshold", "2", "--amount", "5", "--org", slug, "--json").json()
    assert auto["autoTopup"] == {"enabled": True, "thresholdMicroCents": 200_000_000, "amountMicroCents": 500_000_000}
    assert "Auto top-up: $5.00 when the balance falls below $2.00" in cli.ok("ai", "credit", "--org", slug).out
    cli.fails("bad_request", "ai", "autotopup", "on", "--threshold", "9", "--amount", "5", "--org", slug)
    off = cli.ok("ai", "autotopup", "off", "--org", slug, "--json").json()
    assert off["autoTopup"]["enabled"] is False

    ledger = cli.ok("ai", "ledger", "--org", slug, "--json").json()
    assert [(e["kind"], e["microCents"]) for e in ledger["entries"]] == [("topup", 2_000_000_000)]
    shown = cli.ok("ai", "ledger", "--org", slug).out
    assert "topup" in shown and "$20.00" in shown

    assert cli.ok("ai", "revoke", *where, "--json").json() == {"project": "bot", "granted": False}
    assert cli.ok("ai", "status", *where, "--json").json()["granted"] is False
