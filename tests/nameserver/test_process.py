"""The managed PowerDNS as `svc serve` runs it: made under SVC_DATA_DIR/pdns on first start (db,
API key 0600, config), keeps its data across a restart, is started again when it dies, replaces
one a killed svc left running, and a DNS port held by another program is one clear error (in
`svc serve` too). Also the choice of nameserver from the settings and create_app(run_nameserver)."""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import SecretStr

from svc.adapters.nameserver import (
    PowerDnsNameserver,
    build_nameserver,
    dns_port_taken,
    nameserver_plan,
    start_nameserver,
)
from svc.adapters.nameserver.port import NameserverUnavailable, RRsetData
from svc.adapters.nameserver.process import ManagedPowerDns, NameserverPortInUse, PdnsLayout
from svc.adapters.nameserver.settings import NameserverSettings
from svc.app import create_app
from svc.settings import Config, Settings
from svc.supervisor import Port, telling_line
from tests.support.config import configured
from tests.support.pdns import NAMESERVERS, PDNS_REQUIRED, free_dns_port, pdns_settings, running_pdns
from tests.support.wait import until

SVC = str(Path(sys.executable).parent / "svc")


def _dns_port(config: Config) -> int:
    return config.settings_of(NameserverSettings).dns_port


@PDNS_REQUIRED
async def test_first_start_makes_its_files_and_restart_keeps_the_data(tmp_path: Path) -> None:
    async with running_pdns(tmp_path) as pdns:
        root = tmp_path.resolve() / "pdns"
        for name in ("pdns.sqlite3", "api.key", "conf/pdns.conf", "pdns.log"):
            assert (root / name).exists(), name
        for private in ("api.key", "conf/pdns.conf"):
            assert stat.S_IMODE((root / private).stat().st_mode) == 0o600, private
        key = (root / "api.key").read_text()
        conf = (root / "conf/pdns.conf").read_text()
        assert f"local-port={pdns.port}" in conf and "cache-ttl=0" in conf and "daemon=no" in conf

        ns = pdns.nameserver
        await ns.ensure_zone("keep.test.", nameservers=NAMESERVERS)
        await ns.apply("keep.test.", replace=[RRsetData("www.keep.test.", "A", 300, ("192.0.2.1",))], delete=[])
        await ns.set_dnssec("keep.test.", enabled=True)
        ds = await ns.ds_records("keep.test.")

        await pdns.stop()
        # Down: the adapter says so (the job that called retries), DNS is not answered.
        with pytest.raises(NameserverUnavailable):
            await ns.zone_names()
        await pdns.start()
        # Same key, same data, same DNSSEC key; the adapter follows the API to its new port.
        assert (root / "api.key").read_text() == key
        assert await pdns.answer("www.keep.test.", "A") == ["192.0.2.1"]
        assert await ns.ds_records("keep.test.") == ds

    # A later svc on the same data dir finds it all again.
    async with running_pdns(tmp_path) as again:
        assert await again.answer("www.keep.test.", "A") == ["192.0.2.1"]


@PDNS_REQUIRED
async def test_a_dead_pdns_is_started_again(tmp_path: Path) -> None:
    async with running_pdns(tmp_path) as pdns:
        await pdns.nameserver.ensure_zone("phoenix.test.", nameservers=NAMESERVERS)
        first = pdns.running.managed.process.pid
        assert first is not None
        os.kill(first, signal.SIGKILL)

        async def again() -> bool:
            return pdns.running.managed.process.pid != first and await pdns.nameserver.ping()

        await until(again, what="PowerDNS started again")
        assert await pdns.rcode("phoenix.test.", "SOA") == "NOERROR"


@PDNS_REQUIRED
async def test_a_pdns_left_by_a_killed_svc_is_replaced(tmp_path: Path) -> None:
    settings = pdns_settings(tmp_path)
    layout = PdnsLayout(tmp_path.resolve() / "pdns")
    left = ManagedPowerDns("pdns_server", layout, Port("127.0.0.1", _dns_port(settings), ("udp", "tcp")),
                           soa_content="ns1.svc.test. hostmaster.svc.test. 0 10800 3600 604800 300").process
    await left.launch()  # started, not supervised: what an svc killed with -9 leaves
    try:
        # It holds the DNS port, but it is this data dir's: not "taken".
        assert not dns_port_taken(configured(settings))
        running = await start_nameserver(configured(settings))
        assert running is not None
        try:
            assert await left.wait() != 0  # stopped by the new start
            assert await running.nameserver.ping()
        finally:
            await running.stop()
    finally:
        await left.stop()


@PDNS_REQUIRED
async def test_a_taken_dns_port_is_one_clear_error(tmp_path: Path) -> None:
    settings = pdns_settings(tmp_path)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as squatter:
        squatter.bind(("127.0.0.1", _dns_port(settings)))
        assert dns_port_taken(configured(settings))
        with pytest.raises(NameserverPortInUse, match=f"the DNS address 127.0.0.1:{_dns_port(settings)} is in use"):
            await start_nameserver(configured(settings))
    # pdns's own words for the same failure: the telling line is its fatal one.
    said = (f"Nov 24 10:00:00 Unable to bind UDP socket to '127.0.0.1:{_dns_port(settings)}': Address already in use\n"
            "Nov 24 10:00:00 Fatal error: Unable to bind to UDP socket\n")
    assert telling_line(said).endswith("Fatal error: Unable to bind to UDP socket")


@PDNS_REQUIRED
def test_svc_serve_with_the_dns_port_taken_says_so_in_one_line(tmp_path: Path) -> None:
    dns_port = free_dns_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    env |= {"SVC_DATA_DIR": str(tmp_path / "data"), "SVC_EDGE_ENABLED": "false", "SVC_DNS_PORT": str(dns_port)}
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as squatter:
        squatter.bind(("127.0.0.1", dns_port))
        done = subprocess.run([SVC, "serve", "--port", str(free_dns_port())], env=env, capture_output=True,
                              timeout=60, check=False)
    out = done.stdout.decode() + done.stderr.decode()
    assert done.returncode == 1, out
    assert f"error: the DNS port 127.0.0.1:{dns_port} is in use; stop what uses it or choose another with " \
           "SVC_DNS_PORT" in out
    assert "Traceback" not in out


@PDNS_REQUIRED
async def test_create_app_runs_the_managed_nameserver(tmp_path: Path) -> None:
    settings = pdns_settings(tmp_path / "data", enable_dev_auth=True, public_url="http://svc.test")
    app = create_app(settings, run_workers=False, run_nameserver=True)
    async with app.router.lifespan_context(app):
        ns = app.state.ctx.adapters.nameserver
        assert isinstance(ns, PowerDnsNameserver)
        assert ns.description == f"PowerDNS (managed, DNS on 127.0.0.1:{_dns_port(settings)})"
        await ns.ensure_zone("app.test.", nameservers=settings.settings_of(NameserverSettings).nameserver_names)
        assert "app.test." in await ns.zone_names()
    assert app.state.ctx.adapters.nameserver is None
    with pytest.raises(NameserverUnavailable, match="closed"):
        await ns.zone_names()

    # Without run_nameserver (every API test) nothing is started.
    plain = create_app(settings, run_workers=False)
    async with plain.router.lifespan_context(plain):
        assert plain.state.ctx.adapters.nameserver is None


def test_the_plan_follows_the_settings(tmp_path: Path) -> None:
    base = Settings(data_dir=tmp_path)
    assert nameserver_plan(configured(base, dns_enabled=False)).mode == "off"
    missing = nameserver_plan(configured(base, pdns_binary=str(tmp_path / "nope")))
    assert missing.mode == "off"
    assert "was not found" in missing.summary and "SVC_PDNS_API_URL" in missing.summary
    assert "503 dns_not_configured" in missing.summary
    no_key = configured(base, pdns_api_url="http://pdns.example:8081")
    assert nameserver_plan(no_key).mode == "off" and "SVC_PDNS_API_KEY" in nameserver_plan(no_key).summary
    assert build_nameserver(no_key) is None
    external = configured(no_key, pdns_api_key=SecretStr("k"))
    assert nameserver_plan(external).mode == "external"
    adapter = build_nameserver(external)
    assert adapter is not None and adapter.api_url == "http://pdns.example:8081"
    # Names in the settings become absolute and lowercase.
    named = NameserverSettings(nameservers="NS1.Example.com, ns2.example.com.")
    assert named.nameserver_names == ["ns1.example.com.", "ns2.example.com."]


@PDNS_REQUIRED
def test_managed_plan_names_the_dns_address(tmp_path: Path) -> None:
    plan = nameserver_plan(configured(Settings(data_dir=tmp_path), dns_port=5399))
    assert plan.mode == "managed" and "on 127.0.0.1:5399" in plan.summary
