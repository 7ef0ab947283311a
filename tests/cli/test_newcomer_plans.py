"""The second hour as a newcomer lives it on `make run` (issue 45, items 2 and 3): `svc serve` with
what the Makefile's run target turns on (the fake Polar among them), the README's three projects,
then a fourth folder refused at the free plan's limit with the way on (`svc billing upgrade`); the
upgrade and a purchase of AI credit paid on the fake's checkout page as a browser pays it, from
the URL the CLI prints; and a deploy whose svc.json asks for AI says the command that grants it."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.cli.conftest import SVC, Cli, running_server, uniq
from tests.support.make_run import make_run_settings
from tests.support.ports import free_port
from tests.support.wait import WAIT_SECONDS

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def make_run_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`svc serve` with every setting `make run` exports, read from the Makefile; only its fixed SSH
    and SMTP ports are free ones (tests run side by side) and the projects' database cluster stays off (an
    initdb, and nothing here is about databases)."""
    made = make_run_settings()
    assert made.get("SVC_BILLING") == "fake", made  # what this test is about
    settings = {name.removeprefix("SVC_").lower(): value for name, value in made.items()}
    settings |= {"ssh_port": str(free_port()), "smtp_port": str(free_port()), "project_db_enabled": "false"}
    with running_server(tmp_path_factory.mktemp("svc-make-run"), **settings) as url:
        yield url


def _pay_from_the_cli(cli: Cli, args: list[str], price: str) -> str:
    """`svc ARGS --no-browser` as a person runs it: it prints the checkout's URL and waits; the
    person opens that URL (the fake's hosted checkout, as a browser gets it), pays with the test
    card and is sent back to svc; the command then ends once the webhook has done its work. Its
    standard output."""
    proc = subprocess.Popen([SVC, *args, "--no-browser", "--timeout", str(int(WAIT_SECONDS))], env=cli.env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        said: list[str] = []
        for line in proc.stderr:  # the URL comes first, before the waiting
            said.append(line)
            if " at: http" in line:
                break
        else:
            raise AssertionError(f"no checkout URL printed: {''.join(said)}")
        url = line.rsplit(" at: ", 1)[1].strip()
        with httpx.Client(timeout=30) as browser:
            page = browser.get(url)
            assert page.status_code == 200 and f"Pay {price}" in page.text, page.text
            paid = browser.post(url, data={"email": "newcomer@example.com", "card": "4242 4242 4242 4242"})
            assert paid.status_code == 303, paid.text
            assert paid.headers["location"].startswith(cli.api_url + "/orgs/"), paid.headers  # back to svc
        out, err = proc.communicate(timeout=2 * WAIT_SECONDS)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, "".join(said) + err
    return out


def test_past_the_free_plan_to_pro_and_ai_credit_through_the_fakes_checkout(make_run_server: str,
                                                                           tmp_path: Path) -> None:
    cli = Cli(make_run_server, tmp_path / "newcomer")
    cli.login(uniq("newcomer"))
    me = cli.ok("whoami", "--json").json()
    slug = next(o["slug"] for o in me["orgs"] if o["personal"])

    # The README's own steps make three projects; svc.json's "db" is said missing with its command.
    cli.ok("deploy", str(EXAMPLES / "site"))
    cli.ok("deploy", str(EXAMPLES / "worker"))
    notes = cli.ok("deploy", str(EXAMPLES / "notes"))
    assert '"db": true (env.db), which notes does not have yet: `svc db create --project notes`' in notes.out

    # A fourth folder: refused, saying how to upgrade, through the provider's checkout.
    refused = cli.fails("project_limit", "deploy", str(EXAMPLES / "chat"))
    assert "The free plan allows 3 projects" in refused.err
    assert f"`svc billing upgrade --org {slug}`" in refused.err
    assert f"{make_run_server}/orgs/{slug}/billing" in refused.err

    upgraded = _pay_from_the_cli(cli, ["billing", "upgrade"], "$20")
    assert f"{slug} is on the pro plan (100 projects" in upgraded

    # Now it deploys, and says that AI must be granted, and how.
    chat = cli.ok("deploy", str(EXAMPLES / "chat"))
    assert '"ai": true (env.ai), which chat does not have yet: `svc ai grant --project chat` grants it.' \
        in chat.out, chat.out
    assert cli.ok("deploy", str(EXAMPLES / "chat"), "--json").json()["notGranted"] == [
        {"resource": "ai", "binding": "env.ai", "command": "svc ai grant --project chat"}]
    cli.ok("ai", "grant", "--project", "chat")
    again = cli.ok("deploy", str(EXAMPLES / "chat"))
    assert "svc ai grant" not in again.out and "does not have" not in again.out
    assert "notGranted" not in cli.ok("deploy", str(EXAMPLES / "chat"), "--json").json()

    # AI credit, bought through the same checkout.
    bought = _pay_from_the_cli(cli, ["ai", "topup", "5"], "$5")
    assert f"{slug}'s AI credit: $5.00." in bought
    assert cli.ok("ai", "credit", "--json").json()["balanceMicroCents"] == 500_000_000
