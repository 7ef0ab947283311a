"""https on one machine from svc's local CA (SVC_TLS_ISSUER=local, as `make run EDGE_TLS_PORT=...`
starts it): `svc serve` makes the CA and says how to trust it, `svc certs trust` puts it in an NSS
database, a project's default hostname (its own certificate: no client takes `*.localhost`) and a
custom hostname are fetched over https verified against that CA alone, and every URL svc prints
(`svc deploy`, a git push) says https. A name outside the CA's name constraints is refused, in words."""

from __future__ import annotations

import json
import ssl
import subprocess
import time
from pathlib import Path

import httpx

from tests.cli.conftest import SVC, Cli, clean_env, running_server, uniq
from tests.cli.test_repos import git
from tests.support.components import CERTUTIL
from tests.support.ports import free_port
from tests.support.wait import WAIT_SECONDS

pytestmark = CERTUTIL


def _https(tls_port: int, host: str, root: Path) -> httpx.Response:
    """GET / over TLS at 127.0.0.1 with SNI and Host `host`, verified against `root` only."""
    verify = ssl.create_default_context(cafile=str(root))
    with httpx.Client(verify=verify, timeout=10) as http:
        return http.get(f"https://127.0.0.1:{tls_port}/", headers={"host": host}, extensions={"sni_hostname": host})


def _served(tls_port: int, host: str, root: Path) -> httpx.Response:
    """Once the certificate is issued and at the edge (svc's check and the edge's poll)."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        try:
            return _https(tls_port, host, root)
        except (httpx.TransportError, ssl.SSLError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _hostname(cli: Cli, host: str, project: str) -> dict[str, object]:
    """The hostname as `svc hostnames list` gives it, once its certificate is no longer being issued."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        listed = cli.ok("hostnames", "list", "--project", project, "--json").json()["hostnames"]
        found = next(h for h in listed if h["host"] == host)
        cert = found.get("certificate")
        if (cert and cert["status"] != "issuing") or time.monotonic() > deadline:
            return dict(found)
        time.sleep(0.2)


def test_https_on_one_machine_from_svcs_local_ca(tmp_path: Path) -> None:
    tls_port = free_port()
    work = tmp_path / "server"
    work.mkdir()
    with running_server(work, log_level="info", tls_issuer="local", edge_tls_port=str(tls_port)) as api:
        log = (work / "server.log").read_text()
        root = work / "data" / "tls" / "local-ca" / "root.pem"
        assert f"certificates from svc's local CA {root}: trust it once with `svc certs trust`" in log
        # The CA's key is svc's alone; its certificate is what people install.
        assert (root.parent.stat().st_mode & 0o777) == 0o700
        assert ((root.parent / "root.key").stat().st_mode & 0o777) == 0o600

        cli = Cli(api, tmp_path / "me")
        org = uniq("loc")
        cli.login(org)
        # Trusting it: the NSS database Chromium reads (in this person's HOME), not the machine's store.
        trusted = cli.ok("certs", "trust", "--no-system", "--json",
                         env=cli.env(SVC_DATA_DIR=str(work / "data"))).json()
        assert trusted["root"] == str(root) and [s["store"] for s in trusted["steps"]] == ["nss"]
        assert trusted["steps"][0]["done"] is True, trusted
        nssdb = cli.home / ".pki" / "nssdb"
        listed = subprocess.run(["certutil", "-L", "-d", f"sql:{nssdb}"], capture_output=True, text=True, check=True)
        assert f"svc-local-ca-{trusted['fingerprint'][:12]}" in listed.stdout and "C,," in listed.stdout
        said = cli.ok("certs", "trust", "--print", env=cli.env(SVC_DATA_DIR=str(work / "data"))).out
        assert "update-ca-certificates" in said and f"certutil -A -d sql:{nssdb}" in said
        # Without a local CA: one line that says how to get one, nothing changed.
        missing = cli.fails("not_found", "certs", "trust", "--json", env=cli.env(SVC_DATA_DIR=str(tmp_path / "none")))
        assert "svc makes it when it starts with SVC_TLS_ISSUER=local" in missing.err
        assert not (tmp_path / "none").exists()

        # A deploy prints the project's https address.
        site = tmp_path / "site"
        (site / "assets").mkdir(parents=True)
        (site / "assets" / "index.html").write_text("<h1>local https</h1>")
        host = f"web-{org}.localhost"
        deployed = cli.ok("deploy", str(site), "--project", "web", "--json").json()
        assert deployed["url"] == f"https://{host}:{tls_port}"
        assert f"https://{host}:{tls_port}" in cli.ok("deploy", str(site), "--project", "web").out
        page = _served(tls_port, host, root)
        assert page.status_code == 200 and page.text == "<h1>local https</h1>"
        cert = _hostname(cli, host, "web")["certificate"]
        assert isinstance(cert, dict) and cert["status"] == "active" and cert["issuer"].startswith("svc local CA")
        # Over http, it is sent to https.
        moved = httpx.get(f"http://127.0.0.1:{_edge_port(log)}/x", headers={"host": host})
        assert moved.status_code == 308 and moved.headers["location"] == f"https://{host}:{tls_port}/x"

        # A custom hostname in a zone of the org's on svc's DNS: active at once, signed at once.
        cli.ok("dns", "zones", "create", "shop.test")
        cli.ok("dns", "records", "set", "shop.test", "www", "A", "127.0.0.1")
        cli.ok("hostnames", "add", "www.shop.test", "--project", "web")
        cli.ok("hostnames", "verify", "www.shop.test", "--project", "web", "--wait")
        page = _served(tls_port, "www.shop.test", root)
        assert page.status_code == 200 and page.text == "<h1>local https</h1>"

        # A name no reserved TLD holds: the CA's name constraints refuse it, and the row says why.
        cli.ok("dns", "zones", "create", "shop-local.com")
        cli.ok("dns", "records", "set", "shop-local.com", "www", "A", "127.0.0.1")
        cli.ok("hostnames", "add", "www.shop-local.com", "--project", "web")
        cli.ok("hostnames", "verify", "www.shop-local.com", "--project", "web", "--wait")
        refused = _hostname(cli, "www.shop-local.com", "web")["certificate"]
        assert isinstance(refused, dict) and refused["status"] == "failed", refused
        assert "svc's local CA signs names under localhost, test" in refused["lastError"]

        # A git push says where the version is live: over https.
        cli.ok("git-credential", "install")
        url = cli.ok("repos", "create", "site", "--project", "web", "--json").json()["cloneUrl"]
        clone = tmp_path / "clone"
        assert git(cli, "clone", url, str(clone)).returncode == 0
        (clone / "svc.json").write_text(json.dumps({"name": "web"}))
        (clone / "assets").mkdir()
        (clone / "assets" / "index.html").write_text("<h1>pushed</h1>")
        assert git(cli, "add", ".", cwd=clone).returncode == 0
        assert git(cli, "commit", "-qm", "first", cwd=clone).returncode == 0
        pushed = git(cli, "push", "origin", "main", cwd=clone)
        assert pushed.returncode == 0, pushed.stderr
        assert f"live at https://{host}:{tls_port}" in pushed.stderr


def _edge_port(log: str) -> int:
    """The edge's http port, as the banner says it."""
    import re

    found = re.search(r"edge: .*\(nginx \S+ on 127\.0\.0\.1:(\d+)", log)
    assert found is not None, log[:3000]
    return int(found[1])


def test_the_local_ca_is_never_used_beside_an_acme_directory(tmp_path: Path) -> None:
    """Both set: `svc serve` stops before it starts anything, in one line naming both settings."""
    env = clean_env() | {"SVC_DATA_DIR": str(tmp_path / "data"), "SVC_TLS_ISSUER": "local",
                         "SVC_ACME_DIRECTORY_URL": "https://acme-v02.api.letsencrypt.org/directory",
                         "SVC_EDGE_TLS_PORT": str(free_port())}
    done = subprocess.run([SVC, "serve", "--port", str(free_port()), "--edge-port", str(free_port())], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode != 0
    assert ("SVC_TLS_ISSUER=local and SVC_ACME_DIRECTORY_URL are both set: svc's local CA is for trying https on "
            "one machine and is never used where an ACME CA is configured") in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert not (tmp_path / "data" / "tls").exists()  # no CA was made
