"""svc's local certificate authority, for trying https on one machine (`make run`), as Caddy's
internal issuer and mkcert do: a root made once and kept under SVC_DATA_DIR/tls/local-ca (the key
0600, in a 0700 directory), which signs each name at once, with no challenge. It stands in the ACME
port's place (port.py), so the certificates area keeps its rows, states and renewals unchanged.

The root is a root of trust for whoever installs it (`svc certs trust`): its name constraints
allow it to sign only names no public CA signs (localhost, test, example, invalid, internal,
home.arpa, local; RFC 2606, 6761, 8375) and the app domain, and loopback addresses. A browser
refuses any other name it signs, even with the root trusted. Never used with an ACME directory
(docs/security.md)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from svc.adapters.acme.port import AcmeError, AcmeErrorKind, ChallengeSolver, Issued, Method

# Names under these are never signed by a public CA: the local root may sign them (and the app domain).
RESERVED = ("localhost", "test", "example", "invalid", "internal", "home.arpa", "local")
ROOT_FILE = "root.pem"
KEY_FILE = "root.key"
ROOT_DAYS = 3650
# A leaf's lifetime: the certificates area renews it at two thirds of it, as an ACME one.
LEAF_DAYS = 90
BACKDATE = datetime.timedelta(minutes=5)  # a clock a little behind still takes a new certificate


def ca_dir(data_dir: Path) -> Path:
    return data_dir / "tls" / "local-ca"


def root_path(data_dir: Path) -> Path:
    """The root's certificate (public): what `svc certs trust` installs."""
    return ca_dir(data_dir) / ROOT_FILE


def permitted_names(app_domain: str) -> tuple[str, ...]:
    """The DNS names (and every name under them) the root may sign."""
    domain = app_domain.strip(".").lower()
    covered = any(domain == r or domain.endswith("." + r) for r in RESERVED)
    return RESERVED if covered or not domain else (*RESERVED, domain)


def _within(name: str, permitted: tuple[str, ...]) -> bool:
    bare = name.removeprefix("*.").rstrip(".").lower()
    return any(bare == p or bare.endswith("." + p) for p in permitted)


@dataclass(frozen=True)
class _Root:
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey
    permitted: tuple[str, ...]


def _make_root(app_domain: str) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "svc local CA"),
                      x509.NameAttribute(NameOID.COMMON_NAME,
                                         f"svc local CA {now:%Y-%m-%d} {os.urandom(3).hex()}")])
    permitted: list[x509.GeneralName] = [x509.DNSName(n) for n in permitted_names(app_domain)]
    permitted += [x509.IPAddress(ipaddress.ip_network("127.0.0.0/8")), x509.IPAddress(ipaddress.ip_network("::1/128"))]
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - BACKDATE)
            .not_valid_after(now + datetime.timedelta(days=ROOT_DAYS))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                         crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.NameConstraints(permitted_subtrees=permitted, excluded_subtrees=None), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    return cert, key


def load_or_make(data_dir: Path, app_domain: str) -> Path:
    """The root's certificate file, made once (the key 0600 beside it, the directory 0700). Two
    processes making it at once: one directory wins (a rename), both use it."""
    final = ca_dir(data_dir)
    if (final / ROOT_FILE).exists():
        return final / ROOT_FILE
    final.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(final.parent, 0o700)
    staging = Path(tempfile.mkdtemp(prefix=".local-ca-", dir=final.parent))  # 0700
    try:
        cert, key = _make_root(app_domain)
        fd = os.open(staging / KEY_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
        (staging / ROOT_FILE).write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        os.chmod(staging / ROOT_FILE, 0o644)
        with contextlib.suppress(OSError):  # another process's root got there first: it is the one
            os.rename(staging, final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return final / ROOT_FILE


def _load(data_dir: Path, app_domain: str) -> _Root:
    path = load_or_make(data_dir, app_domain)
    cert = x509.load_pem_x509_certificate(path.read_bytes())
    key = serialization.load_pem_private_key((path.parent / KEY_FILE).read_bytes(), password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    try:
        constraints = cert.extensions.get_extension_for_class(x509.NameConstraints).value
        permitted = tuple(str(n.value) for n in constraints.permitted_subtrees or () if isinstance(n, x509.DNSName))
    except x509.ExtensionNotFound:
        permitted = ()
    return _Root(cert, key, permitted)


def _sign(root: _Root, names: list[str]) -> Issued:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    not_before, not_after = now - BACKDATE, now + datetime.timedelta(days=LEAF_DAYS)
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
            .issuer_name(root.cert.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(not_before).not_valid_after(not_after)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                         crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(root.key.public_key()), critical=False)
            .sign(root.key, hashes.SHA256()))
    issuer = root.cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return Issued(fullchain_pem=cert.public_bytes(serialization.Encoding.PEM).decode(),
                  key_pem=key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                            serialization.NoEncryption()).decode(),
                  not_before=not_before, not_after=not_after,
                  issuer=str(issuer[0].value) if issuer else "svc local CA", names=tuple(names))


class LocalCa:
    """The Acme port on svc's local root: `issue` signs at once (no challenge is published), no
    renewal window (renewed at two thirds), no CAA identity, no account."""

    def __init__(self, data_dir: Path, app_domain: str) -> None:
        self.data_dir = data_dir
        self.app_domain = app_domain
        self.description = f"svc's local CA ({root_path(data_dir)})"

    async def issue(self, names: list[str], method: Method, solver: ChallengeSolver) -> Issued:
        root = await asyncio.to_thread(_load, self.data_dir, self.app_domain)
        outside = [n for n in names if not _within(n, root.permitted)]
        if outside:
            raise AcmeError(AcmeErrorKind.rejected, (
                f"svc's local CA signs names under {', '.join(root.permitted)} only (its name constraints, so "
                f"that trusting it endangers no other site), not {', '.join(outside)}: try https locally with a "
                f"name under one of these, or get certificates over ACME (docs/tls.md)"))
        return await asyncio.to_thread(_sign, root, names)

    async def renewal_time(self, fullchain_pem: str) -> datetime.datetime | None:
        return None

    async def caa_identities(self) -> tuple[str, ...]:
        return ()

    def account_key_pem(self) -> str:
        return ""
