"""Edge TLS benchmark (docs/tls.md "Performance"): svc's edge over https against a bare nginx with
the same certificate and TLS settings, the time from a hostname turning active to https answering
with its own certificate, and what 1,000 certificates cost the edge against 10.

    .venv/bin/python bench/edge_tls.py [--duration 5] [--rounds 3] [--connections 32]
                                       [--only throughput,active,certificates]

- throughput: a real `svc serve` (SQLite, its managed PowerDNS) gets the app domain's wildcard from a
  real ACME server (pebble, DNS-01 on that PowerDNS) and serves a project's 10 KB file over https.
  The peer is a bare nginx with the static-file settings the edge also has ("tuned" in
  bench/edge.py) plus the edge's TLS settings (TLS 1.2/1.3, shared session cache), serving the same
  directory with the same certificate and key files. wrk (one thread, core 1; servers on core 0)
  fetches the file with keep-alive, and with `Connection: close`, so that every request makes a new
  TLS session (wrk keeps no client session: each is a full handshake). wrk names the host by the
  URL (SNI), so it runs in a mount namespace of its own whose /etc/hosts names it 127.0.0.1 (the
  machine's is not touched). Goals: keep-alive >= 0.95x, new sessions >= 0.8x.
- active: a custom hostname in a zone of the org on svc's DNS (proven at once) is added through the
  API; the time until a TLS handshake for it verifies against pebble's root. Goal: under 10 s.
- certificates: a second `svc serve` (no ACME) is given 10, then 1,000 self-signed certificates in
  its store (keys sealed with its keyring, as an order writes them); the edge's reload time (svc's
  log: from the certificates written to the reload done, which includes `nginx -t`) and nginx's
  memory (PSS of master and workers) after each. Goals: reload under 1 s, memory <= 2x of 10's.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import re
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from harness import children, free_port

from edge import FILE, bare_config, bundle, pin, wait_http, wrk
from svc.adapters.acme.pebble import Pebble, find_pebble

ROOT = Path(__file__).resolve().parents[1]
SVC = Path(sys.executable).parent / "svc"
HOST_APP = "apps.test"
GOALS = {"keep-alive": 0.95, "new sessions": 0.8}


def start_svc(tmp: Path, name: str, env_extra: dict[str, str],
              edge_port: int | None = None) -> tuple[subprocess.Popen[bytes], str, int, Path]:
    """`svc serve` on core 0 with its data under tmp/name: (process, API URL, edge port, log)."""
    api_port, edge_port = free_port(), edge_port or free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    env |= {"SVC_DATA_DIR": str(tmp / name), "SVC_ENABLE_DEV_AUTH": "true", "SVC_PUBLIC_URL": f"http://127.0.0.1:{api_port}",
            "SVC_APP_DOMAIN": HOST_APP, "SVC_TRUST_OWN_ZONES": "true", **env_extra}
    log = tmp / f"{name}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(["taskset", "-c", "0", str(SVC), "serve", "--port", str(api_port), "--edge-port",
                                 str(edge_port), "--log-level", "info"], env=env, stdout=out,
                                stderr=subprocess.STDOUT, cwd=ROOT)
    wait_http(f"http://127.0.0.1:{api_port}/v1/openapi.json", proc, log)
    return proc, f"http://127.0.0.1:{api_port}", edge_port, log


def stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def handshake(port: int, host: str, root_pem: str) -> bool:
    """A TLS handshake for `host` verified against `root_pem`."""
    ctx = ssl.create_default_context(cadata=root_pem)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, \
                ctx.wrap_socket(raw, server_hostname=host):
            return True
    except (OSError, ssl.SSLError):
        return False


def until(check, seconds: float, what: str) -> float:  # type: ignore[no-untyped-def]
    """Seconds until `check()` holds (polled every 20 ms); exits when it does not within `seconds`."""
    t0 = time.monotonic()
    while not check():
        if time.monotonic() - t0 > seconds:
            sys.exit(f"{what} did not happen within {seconds} s")
        time.sleep(0.02)
    return time.monotonic() - t0


def resolves(dns_port: int, name: str) -> bool:
    """svc's PowerDNS answers the name's A record (the CA asks it before its HTTP-01 check)."""
    import dns.exception
    import dns.message
    import dns.query

    try:
        answer = dns.query.udp(dns.message.make_query(name, "A"), "127.0.0.1", port=dns_port, timeout=1)
    except dns.exception.Timeout:
        return False
    return bool(answer.answer)


def login(api: str) -> tuple[httpx.Client, str]:
    token = httpx.post(f"{api}/v1/auth/dev/login", json={"subject": "bench"}).json()["token"]
    client = httpx.Client(base_url=api, headers={"authorization": f"Bearer {token}"}, timeout=60)
    org = next(o["slug"] for o in client.get("/v1/me").json()["orgs"] if o["personal"])
    return client, org


def cert_files(data_dir: Path, name: str, out: Path) -> tuple[Path, Path]:
    """The chain and key the edge serves for `name` (from its certificates' table, svc/edge/tls.py),
    as files under `out` for the bare nginx."""
    import base64

    for text in (data_dir / "edge" / "certs" / "table").read_text().splitlines():
        fields = text.split("\t")
        if fields[1] == name:
            chain, key = out / "bare-chain.pem", out / "bare-key.pem"
            chain.write_bytes(base64.b64decode(fields[2]))
            key.write_bytes(base64.b64decode(fields[3]))
            key.chmod(0o600)
            return chain, key
    sys.exit(f"the edge serves no certificate for {name}")


def throughput_and_active(args: argparse.Namespace, tmp: Path, report: dict[str, object]) -> None:
    binary = find_pebble()
    if binary is None:
        sys.exit("bench/edge_tls.py needs pebble (make setup)")
    dns_port, tls_port = free_port(), free_port()
    procs: list[subprocess.Popen[bytes]] = []

    async def start_pebble(edge_port: int) -> Pebble:
        pebble = Pebble(tmp / "pebble", dns_server=f"127.0.0.1:{dns_port}", http_port=edge_port, tls_port=free_port())
        await pebble.start(binary)
        return pebble

    loop = asyncio.new_event_loop()
    edge_port = free_port()
    pebble = loop.run_until_complete(start_pebble(edge_port))
    root = loop.run_until_complete(pebble.root_pem())
    try:
        svc, api, _, log = start_svc(tmp, "tls", {
            "SVC_DNS_PORT": str(dns_port), "SVC_ACME_DIRECTORY_URL": pebble.directory_url,
            "SVC_ACME_CA_BUNDLE": pebble.ca_bundle, "SVC_EDGE_TLS_PORT": str(tls_port),
            "SVC_CERTIFICATE_CHECK_SECONDS": "1", "SVC_HOSTNAME_VERIFY_SECONDS": "1",
            "SVC_EDGE_TRAFFIC_LOG": "false" if args.no_traffic_log else "true"}, edge_port=edge_port)
        procs.append(svc)
        client, org = login(api)
        r = client.post(f"/v1/orgs/{org}/projects", json={"name": "web"})
        assert r.status_code == 201, r.text
        host = r.json()["hostname"]
        r = client.post(f"/v1/orgs/{org}/projects/web/deployments", content=bundle(),
                        headers={"content-type": "application/gzip"})
        assert r.status_code == 201, r.text
        web_root = tmp / "tls" / "sites" / r.json()["digest"].split(":", 1)[1] / "assets"
        until(lambda: handshake(tls_port, host, root), 120, f"https for {host}")
        pin(int((tmp / "tls" / "edge" / "nginx.pid").read_text()), 0)

        if "active" in args.only:
            r = client.post(f"/v1/orgs/{org}/dns/zones", json={"name": "bench-shop.test"})
            assert r.status_code == 200, r.text
            times = []
            for i in range(args.rounds):
                name = f"n{i}.bench-shop.test"
                r = client.put(f"/v1/orgs/{org}/dns/zones/bench-shop.test/rrsets/n{i}/A",
                               json={"records": ["127.0.0.1"]})
                assert r.status_code == 200, r.text
                until(lambda name=name: resolves(dns_port, name), 60, f"{name} in svc's DNS")
                r = client.post(f"/v1/orgs/{org}/projects/web/hostnames", json={"name": name})
                assert r.status_code == 200, r.text

                def active(name: str = name) -> bool:
                    listed = client.get(f"/v1/orgs/{org}/projects/web/hostnames").json()["hostnames"]
                    return any(h["host"] == name and h["status"] == "active" for h in listed)

                # Proven by the org's own zone at svc's next ownership check; from then on, the order.
                until(active, 60, f"{name} active")
                times.append(until(lambda name=name: handshake(tls_port, name, root), 60, f"https for {name}"))
                print(f"active -> https for {name}: {times[-1]:.2f} s")
            median = statistics.median(times)
            verdict = "met" if median < 10 else "MISSED"
            print(f"active -> https: median {median:.2f} s of {len(times)} (goal < 10 s: {verdict})")
            report["active_to_https_s"] = round(median, 2)

        if "throughput" in args.only:
            chain, key = cert_files(tmp / "tls", f"*.{HOST_APP}", tmp)
            bare_port = free_port()
            with (tmp / "bare.log").open("wb") as out:
                conf = bare_config(tmp, web_root, bare_port, "bare-tls", True, tls=(chain, key))
                bare = subprocess.Popen(["taskset", "-c", "0", "nginx", "-p", str(tmp), "-c", str(conf), "-g",
                                         "daemon off;"], stdout=out, stderr=subprocess.STDOUT)
            procs.append(bare)
            until(lambda: handshake(bare_port, f"bare.{HOST_APP}", root), 30, "the bare nginx")
            hosts = tmp / "hosts"
            hosts.write_text(f"127.0.0.1 {host} bare.{HOST_APP}\n" + Path("/etc/hosts").read_text())
            # wrk in a mount namespace of its own where these names are 127.0.0.1.
            wrap = ("unshare", "-m", "sh", "-c", 'mount --bind "$0" /etc/hosts && exec "$@"', str(hosts))
            targets = {
                ("bare", "keep-alive"): (f"https://bare.{HOST_APP}:{bare_port}{FILE}", {}),
                ("edge", "keep-alive"): (f"https://{host}:{tls_port}{FILE}", {}),
                ("bare", "new sessions"): (f"https://bare.{HOST_APP}:{bare_port}{FILE}", {"Connection": "close"}),
                ("edge", "new sessions"): (f"https://{host}:{tls_port}{FILE}", {"Connection": "close"}),
            }
            print(f"10 KB file over https, wrk -t1 -c{args.connections} -d{args.duration}s on core 1; servers on "
                  f"core 0; load average {os.getloadavg()[0]:.2f}")
            results: dict[tuple[str, str], list[float]] = {t: [] for t in targets}
            for url, headers in targets.values():  # warm-up
                wrk(0, url.split("/")[2].split(":")[0], headers, 1, args.connections, url=url, wrap=wrap)
            for rnd in range(1, args.rounds + 1):
                for (who, mode), (url, headers) in targets.items():
                    rps, p99, _ = wrk(0, url.split("/")[2].split(":")[0], headers, args.duration, args.connections,
                                      url=url, wrap=wrap)
                    results[(who, mode)].append(rps)
                    print(f"round {rnd} {who:<5} {mode:<13} {rps:>10.0f} req/s  p99 {p99:7.2f} ms")
            for mode, goal in GOALS.items():
                edge_rps = statistics.median(results[("edge", mode)])
                bare_rps = statistics.median(results[("bare", mode)])
                ratio = edge_rps / bare_rps
                print(f"{mode:<13} edge {edge_rps:>9.0f} req/s, bare nginx {bare_rps:>9.0f} req/s: {ratio:.2f}x "
                      f"(goal >= {goal}x: {'met' if ratio >= goal else 'MISSED'})")
                report[f"https_{mode.replace(' ', '_').replace('-', '_')}"] = {
                    "edge_rps": round(edge_rps), "bare_rps": round(bare_rps), "ratio": round(ratio, 3)}
    except SystemExit:
        print(log.read_text()[-4000:] if procs else "")
        raise
    finally:
        for proc in reversed(procs):
            stop(proc, signal.SIGQUIT if proc is not procs[0] else signal.SIGTERM)
        loop.run_until_complete(pebble.stop())
        loop.close()


def pss_kib(pid: int) -> int:
    """PSS of `pid` and its children (kB): what the processes cost, shared pages shared out."""
    total = 0
    for p in [pid, *children(pid)]:
        try:
            text = Path(f"/proc/{p}/smaps_rollup").read_text()
        except OSError:
            continue
        found = re.search(r"^Pss:\s+(\d+) kB", text, re.M)
        total += int(found.group(1)) if found else 0
    return total


def self_signed(names: list[str]) -> list[tuple[str, str, str]]:
    """(name, chain PEM, key PEM) each: an EC P-256 certificate as an order gives (one name)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    made = []
    for name in names:
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
                .serial_number(x509.random_serial_number()).not_valid_before(now)
                .not_valid_after(now + datetime.timedelta(days=90))
                .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
                .sign(key, hashes.SHA256()))
        made.append((name, cert.public_bytes(serialization.Encoding.PEM).decode(),
                     key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()).decode()))
    return made


def served_name(port: int, name: str) -> bool:
    """The edge answers a handshake for `name` with `name`'s own certificate (self-signed here)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, \
                ctx.wrap_socket(raw, server_hostname=name) as conn:
            der = conn.getpeercert(binary_form=True)
    except (OSError, ssl.SSLError):
        return False
    from cryptography import x509

    return der is not None and name in str(x509.load_der_x509_certificate(der).subject)


def reload_seconds(master: int) -> float:
    """A graceful reload of nginx (SIGHUP) until only workers of the new generation are left."""
    old = set(children(master))
    t0 = time.monotonic()
    os.kill(master, signal.SIGHUP)
    until(lambda: (now := set(children(master))) and not now & old, 60, "the reload")
    return time.monotonic() - t0


def certificates(tmp: Path, report: dict[str, object]) -> None:
    """10, then 1,000 certificates in the store of a `svc serve` without ACME."""
    from sqlalchemy import create_engine
    from sqlalchemy.orm import Session

    from svc.domains.certificates.service import seal_context
    from svc.kit.crypto import Keyring
    from svc.models import Certificate

    secret = os.urandom(32).hex()
    tls_port = free_port()
    svc, _, _, log = start_svc(tmp, "many", {"SVC_EDGE_TLS_PORT": str(tls_port), "SVC_SECRET_KEY": secret})
    keys = Keyring(secret.encode())
    engine = create_engine(f"sqlite:///{tmp / 'many' / 'svc.sqlite3'}", connect_args={"timeout": 30})
    made = self_signed([f"site{i}.bench.example" for i in range(1000)])
    master = int((tmp / "many" / "edge" / "nginx.pid").read_text())
    figures: dict[int, dict[str, float]] = {}
    try:
        held = 0
        for count in (10, 1000):
            now = datetime.datetime.now(datetime.UTC)
            with Session(engine) as session, session.begin():
                for name, chain, key in made[held:count]:
                    session.add(Certificate(name=name, kind="host", status="active", fullchain=chain,
                                            sealed_key=keys.seal(key.encode(), context=seal_context(name)),
                                            not_before=now, not_after=now + datetime.timedelta(days=90),
                                            issuer="bench", failures=0, created_at=now, updated_at=now))
            held = count
            # From the commit: svc's next poll (every SVC_EDGE_CONVERGE_SECONDS, 2 s) writes the table
            # and sends nginx what changed.
            served = until(lambda name=made[count - 1][0]: served_name(tls_port, name), 120, f"{count} certificates")
            said = re.findall(rf"edge: {count} certificates served on \S+ \((\d+) changes sent to nginx in "
                              r"([\d.]+) s\)", log.read_text())
            sent = float(said[-1][1]) if said else float("nan")
            assert all(served_name(tls_port, name) for name, _, _ in made[:count:97]), "a certificate is not served"
            memory = pss_kib(master)
            reload_s = reload_seconds(master)
            figures[count] = {"served_s": served, "sent_s": sent, "reload_s": reload_s, "pss_kib": memory}
            print(f"{count:>5} certificates: served {served:.2f} s after the commit (the changes sent to nginx in "
                  f"{sent:.3f} s, no reload); nginx PSS {memory / 1024:.1f} MiB; a reload (SIGHUP, the table "
                  f"read again) {reload_s:.3f} s")
        ratio = figures[1000]["pss_kib"] / figures[10]["pss_kib"]
        reload_1000 = figures[1000]["reload_s"]
        print(f"1,000 against 10: a reload {reload_1000:.3f} s against {figures[10]['reload_s']:.3f} s "
              f"(goal < 1 s: {'met' if reload_1000 < 1 else 'MISSED'}; a certificate itself needs none), "
              f"memory {ratio:.2f}x (goal <= 2x: {'met' if ratio <= 2 else 'MISSED'})")
        report["certificates"] = {"10": figures[10], "1000": figures[1000], "memory_ratio": round(ratio, 2)}
    finally:
        engine.dispose()
        stop(svc)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--only", default="throughput,active,certificates")
    ap.add_argument("--no-traffic-log", action="store_true",
                    help="the edge without its log of every request (SVC_EDGE_TRAFFIC_LOG=false): no traffic counts")
    args = ap.parse_args()
    args.only = set(args.only.split(","))
    for tool in ("wrk", "taskset", "nginx", "unshare"):
        if not shutil.which(tool, path=os.environ.get("PATH", "") + ":/usr/sbin"):
            sys.exit(f"bench/edge_tls.py needs {tool}")
    # A short directory: PowerDNS's control socket path must fit a unix socket's 108 bytes.
    tmp = Path(tempfile.mkdtemp(prefix="svctls-"))
    report: dict[str, object] = {}
    try:
        if args.only & {"throughput", "active"}:
            throughput_and_active(args, tmp, report)
        if "certificates" in args.only:
            certificates(tmp, report)
        print(json.dumps(report))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
