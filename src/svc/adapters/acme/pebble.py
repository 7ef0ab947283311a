"""pebble, Let's Encrypt's test ACME server (Debian's `pebble`), run through svc's process
supervisor: for the tests, and for a local svc that wants https without a public CA.

It needs a certificate for its own listener (the package ships none): a self-signed one for
127.0.0.1 and localhost, made at start beside its configuration, which callers trust (`ca_bundle`).
`-dnsserver` points its lookups (and DNS-01 checks) at svc's PowerDNS; `httpPort`/`tlsPort` are
where it connects for HTTP-01 and TLS-ALPN-01 (the edge's ports). It keeps no state across
restarts. The root it issues under is at its management port (`/roots/0`)."""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import ssl
from dataclasses import dataclass
from pathlib import Path

import httpx
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from svc.supervisor import Port, ProcessSpec, Supervisor, free_tcp_port

START_SECONDS = 30.0


def find_pebble() -> str | None:
    from svc.supervisor import find_binary

    return find_binary("pebble", ("/usr/bin",))


def _self_signed(cert: Path, key: Path) -> None:
    private = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pebble listener (svc)")])
    now = datetime.datetime.now(datetime.UTC)
    made = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(private.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(private, hashes.SHA256()))
    key.write_bytes(private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    os.chmod(key, 0o600)
    cert.write_bytes(made.public_bytes(serialization.Encoding.PEM))


@dataclass
class Pebble:
    """A running pebble: its directory URL, the listener certificate to trust, its root."""

    root: Path
    dns_server: str  # "127.0.0.1:5353"
    http_port: int
    tls_port: int
    listen_port: int = 0
    management_port: int = 0
    supervisor: Supervisor | None = None
    # How often (percent) a new order gets back an authorization still valid from an earlier one,
    # as Let's Encrypt does (PEBBLE_AUTHZREUSE; None: pebble's 50). 100: every renewal meets one.
    authz_reuse: int | None = None
    # The certificates' lifetime (config certificateValidityPeriod; None: pebble's 5 years): a
    # few minutes lets a test see svc renew one.
    validity_seconds: int | None = None

    @property
    def directory_url(self) -> str:
        return f"https://127.0.0.1:{self.listen_port}/dir"

    @property
    def ca_bundle(self) -> str:
        """The listener's certificate: what a client of the directory trusts."""
        return str(self.root / "listener.pem")

    async def start(self, binary: str) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        cert, key = self.root / "listener.pem", self.root / "listener.key"
        _self_signed(cert, key)
        self.listen_port, self.management_port = free_tcp_port("127.0.0.1"), free_tcp_port("127.0.0.1")
        config = self.root / "pebble.json"
        options: dict[str, object] = {
            "listenAddress": f"127.0.0.1:{self.listen_port}",
            "managementListenAddress": f"127.0.0.1:{self.management_port}",
            "certificate": str(cert), "privateKey": str(key),
            "httpPort": self.http_port, "tlsPort": self.tls_port,
            "ocspResponderURL": "", "externalAccountBindingRequired": False}
        if self.validity_seconds is not None:
            options["certificateValidityPeriod"] = self.validity_seconds
        config.write_text(json.dumps({"pebble": options}))
        # No random nonce rejections nor validation sleeps: a test CA that behaves as a good one.
        env = {"PATH": os.defpath, "PEBBLE_WFE_NONCEREJECT": "0", "PEBBLE_VA_NOSLEEP": "1"}
        if self.authz_reuse is not None:
            env["PEBBLE_AUTHZREUSE"] = str(self.authz_reuse)
        self.supervisor = Supervisor(ProcessSpec(
            name=f"ACME test CA (pebble on 127.0.0.1:{self.listen_port})", binary=binary,
            args=("-config", str(config), "-dnsserver", self.dns_server), log=self.root / "pebble.log",
            env=env, cwd=self.root, ports=(Port("127.0.0.1", self.listen_port),), ready=self._ready,
            start_seconds=START_SECONDS))
        await self.supervisor.start()

    async def _ready(self) -> bool:
        try:
            async with httpx.AsyncClient(verify=ssl.create_default_context(cafile=self.ca_bundle), timeout=2) as http:
                return (await http.get(self.directory_url)).status_code == 200
        except httpx.HTTPError:
            return False

    async def root_pem(self) -> str:
        """The root pebble issues under (it makes a new one at each start)."""
        async with httpx.AsyncClient(verify=ssl.create_default_context(cafile=self.ca_bundle), timeout=10) as http:
            r = await http.get(f"https://127.0.0.1:{self.management_port}/roots/0")
            r.raise_for_status()
            return r.text

    async def stop(self) -> None:
        if self.supervisor is not None:
            await self.supervisor.stop()
