"""The certificates the edge serves, as files nginx reads (SVC_DATA_DIR/edge/certs, 0700; each
chain and key 0600, written aside and renamed into place). A file is named by the sha256 of its
certificate's name, never by the name itself (a host name may hold `*`)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

from svc.adapters.edge.port import ServedCertificate
from svc.edge.config import EdgeCertificate


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.new")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def write_certificates(root: Path, served: Sequence[ServedCertificate]) -> tuple[EdgeCertificate, ...]:
    """Write `served` under `root` (removing the files of certificates no longer served)."""
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(root, 0o700)
    written: list[EdgeCertificate] = []
    for cert in sorted(served, key=lambda c: c.name):
        stem = hashlib.sha256(cert.name.encode()).hexdigest()[:24]
        chain, key = root / f"{stem}.pem", root / f"{stem}.key"
        _write(chain, cert.fullchain_pem)
        _write(key, cert.key_pem)
        written.append(EdgeCertificate(server_name=cert.name, chain=chain, key=key))
    keep = {p.name for c in written for p in (c.chain, c.key)}
    for path in root.iterdir():
        if path.name not in keep:
            path.unlink(missing_ok=True)
    return tuple(written)
