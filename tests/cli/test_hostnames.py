"""`svc hostnames list|add|verify|remove` against a real server (its managed PowerDNS answers the
ownership checks): the record to create printed, `--wait` until active, `--json` everywhere."""

from __future__ import annotations

import uuid

import httpx

from tests.cli.conftest import Cli, People, uniq
from tests.support.pdns import PDNS_REQUIRED

pytestmark = PDNS_REQUIRED


def _api(cli: Cli, subject: str) -> httpx.Client:
    """The same person over HTTP (for the DNS zones the test needs)."""
    r = httpx.post(f"{cli.api_url}/v1/auth/dev/login", json={"subject": subject}, timeout=10)
    assert r.status_code == 200, r.text
    return httpx.Client(base_url=cli.api_url, headers={"authorization": f"Bearer {r.json()['token']}"}, timeout=10)


def test_add_list_verify_wait_and_remove(cli: Cli, people: People) -> None:
    subject, slug, zone = uniq("owner"), uniq("acme"), f"{uuid.uuid4().hex[:10]}.example"
    cli.login(subject)
    cli.ok("orgs", "create", slug)
    cli.ok("projects", "create", "web", "--org", slug)
    where = ("--project", "web", "--org", slug)

    # A name outside any zone of the org: the record to create, printed to copy.
    added = cli.ok("hostnames", "add", "Shop.Example.NET", *where)
    assert "Added shop.example.net to web." in added.out
    listed = cli.ok("hostnames", "list", *where, "--json").json()["hostnames"]
    assert [h["host"] for h in listed] == [f"web-{slug}.localhost", "shop.example.net"]
    shop = listed[1]
    value = shop["verification"]["value"]
    for text in ("TXT", "_svc-verify.shop.example.net", f'"{value}"', "CNAME", "edge.localhost."):
        assert text in added.out, (text, added.out)
    # Adding it again: the same record.
    assert cli.ok("hostnames", "add", "shop.example.net", *where, "--json").json() == shop

    table = cli.ok("hostnames", "list", *where).out
    assert "pending_dns" in table and f"web-{slug}.localhost" in table and "_svc-verify.shop.example.net" in table

    # In the org's own zone on svc: proven without any record; --wait follows it until active.
    with _api(cli, subject) as api:
        assert api.post(f"/v1/orgs/{slug}/dns/zones", json={"name": zone}).status_code == 200
    active = cli.ok("hostnames", "add", f"www.{zone}", *where, "--wait", "--timeout", "60", "--json").json()
    assert active["host"] == f"www.{zone}" and active["status"] == "active" and active["lastError"] is None
    waited = cli.ok("hostnames", "add", f"api.{zone}", *where, "--wait", "--timeout", "60")
    assert f"api.{zone} is active" in waited.out
    # Without --wait: svc makes the record in the zone itself, so there is nothing to create.
    said = cli.ok("hostnames", "add", f"app.{zone}", *where).out
    assert f"app.{zone} is in {zone}, a zone of this org on svc: svc creates its record there itself" in said, said
    assert "it turns active by itself" in said and "create one of these records" not in said, said

    # Proven by a TXT record in a zone someone else holds here: verify --wait sees it served.
    eve = people("eve")
    other_subject, other_slug, other_zone = uniq("eve"), uniq("other"), f"{uuid.uuid4().hex[:10]}.example"
    eve.login(other_subject)
    eve.ok("orgs", "create", other_slug)
    txt = cli.ok("hostnames", "add", f"blog.{other_zone}", *where, "--json").json()
    pending = cli.ok("hostnames", "verify", f"blog.{other_zone}", *where, "--json").json()
    assert pending["status"] == "pending_dns" and pending["lastError"]
    shown = cli.ok("hostnames", "verify", f"blog.{other_zone}", *where)
    assert "is pending" in shown.out and "Last check:" in shown.out and "_svc-verify.blog." in shown.out
    with _api(eve, other_subject) as api:
        assert api.post(f"/v1/orgs/{other_slug}/dns/zones", json={"name": other_zone}).status_code == 200
        r = api.put(f"/v1/orgs/{other_slug}/dns/zones/{other_zone}/rrsets/_svc-verify.blog/TXT",
                    json={"records": [txt["verification"]["value"]]})
        assert r.status_code == 200, r.text
    done = cli.ok("hostnames", "verify", f"blog.{other_zone}", *where, "--wait", "--timeout", "60", "--json").json()
    assert done["status"] == "active"

    # Refusals keep their codes; nothing printed on stdout.
    cli.fails("bad_request", "hostnames", "add", "*.example.net", *where)
    cli.fails("bad_request", "hostnames", "remove", f"web-{slug}.localhost", *where)
    cli.fails("not_found", "hostnames", "verify", "nothing.example.net", *where)
    eve.ok("projects", "create", "site", "--org", other_slug)
    eve.fails("hostname_taken", "hostnames", "add", "shop.example.net", "--project", "site", "--org", other_slug)
    slow = cli.fails("timeout", "hostnames", "verify", "shop.example.net", *where, "--wait", "--timeout", "1")
    assert "still pending" in slow.err

    removed = cli.ok("hostnames", "remove", "shop.example.net", *where, "--json").json()
    assert removed == {"removed": True, "org": slug, "project": "web", "host": "shop.example.net"}
    assert "Removed" in cli.ok("hostnames", "remove", f"www.{zone}", *where).out
    hosts = [h["host"] for h in cli.ok("hostnames", "list", *where, "--json").json()["hostnames"]]
    assert hosts == [f"web-{slug}.localhost", f"api.{zone}", f"app.{zone}", f"blog.{other_zone}"]
