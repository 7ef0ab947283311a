"""The certificates the edge serves, as nginx gets them (lua/svc_tls.lua): a table of one line per
certificate (its name, chain, key and stapled OCSP answer), held in nginx's shared memory and
picked per handshake by the name asked for (SNI). svc sends the lines that changed through the
control server, so a new or renewed certificate needs no reload, however many there are (a server
block per certificate cost nginx 37x the memory and 9 s a reload at 1,000: docs/tls.md).

On disk (SVC_DATA_DIR/edge/certs, 0700; each file 0600, written aside and renamed into place): the
table's snapshot, which nginx reads when it starts or reloads, and the placeholder certificate
nginx wants for a TLS listener (never shown: a name without a certificate gets no handshake)."""

from __future__ import annotations

import base64
import datetime
import os
from collections.abc import Sequence
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from svc.adapters.edge.port import ServedCertificate
from svc.kit.hosts import valid_host

TABLE = "table"
PLACEHOLDER_CHAIN = "placeholder.pem"
PLACEHOLDER_KEY = "placeholder.key"


def _write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.new")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def line(cert: ServedCertificate) -> str:
    """The table's line of one certificate (lua/svc_tls.lua's `set`). It carries the certificate's
    notAfter (Unix seconds): nginx stops serving it then, whenever svc's next change comes."""
    name = cert.name.lower()
    if not valid_host(name.removeprefix("*.")):
        raise ValueError(f"not a certificate name: {cert.name!r}")
    not_after = cert.not_after or x509.load_pem_x509_certificates(cert.fullchain_pem.encode())[0].not_valid_after_utc
    fields = ["set", name, str(int(not_after.timestamp())), _b64(cert.fullchain_pem.encode()),
              _b64(cert.key_pem.encode())]
    if cert.ocsp_der:
        fields.append(_b64(cert.ocsp_der))
    return "\t".join(fields)


def prepare(root: Path) -> None:
    """The directory (0700) and the placeholder certificate nginx's TLS listener needs to start."""
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(root, 0o700)
    for path in root.iterdir():  # files of earlier versions (a chain and key per certificate)
        if path.name not in (TABLE, PLACEHOLDER_CHAIN, PLACEHOLDER_KEY):
            path.unlink(missing_ok=True)
    if (root / PLACEHOLDER_CHAIN).is_file() and (root / PLACEHOLDER_KEY).is_file():
        return
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "svc edge placeholder")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=3650)).sign(key, hashes.SHA256()))
    _write(root / PLACEHOLDER_KEY, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                     serialization.NoEncryption()))
    _write(root / PLACEHOLDER_CHAIN, cert.public_bytes(serialization.Encoding.PEM))


def write_table(root: Path, served: Sequence[ServedCertificate]) -> dict[str, str]:
    """The table's snapshot under `root` (what nginx loads when it starts); its lines by name."""
    prepare(root)
    lines = {cert.name.lower(): line(cert) for cert in sorted(served, key=lambda c: c.name)}
    _write(root / TABLE, "".join(f"{text}\n" for text in lines.values()).encode())
    return lines


def changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """The lines that turn nginx's table `before` into `after`."""
    sets = [text for name, text in after.items() if before.get(name) != text]
    return sets + [f"del\t{name}" for name in before if name not in after]
