"""`svc certs trust`: installs svc's local CA (SVC_TLS_ISSUER=local, docs/tls.md) where curl and
Chromium look, on this machine: the system store (Debian's update-ca-certificates: curl, wget,
OpenSSL) and the user's NSS database (~/.pki/nssdb: Chromium, Chrome). What it cannot do (not root,
certutil missing) it prints as commands; `--print` only prints them. Reads nothing of the store."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated

import typer
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from svc.adapters.acme.local import root_path
from svc.settings import Settings

SYSTEM_DIR = Path("/usr/local/share/ca-certificates")  # Debian, Ubuntu: update-ca-certificates reads it


@dataclass
class Step:
    store: str  # system | nss
    done: bool
    commands: list[str]
    message: str
    error: bool = False  # it was tried and failed


def _run(argv: list[str]) -> str | None:
    """None when it worked, else what it said."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    except OSError as exc:
        return str(exc)
    return None if done.returncode == 0 else (done.stderr or done.stdout).strip() or f"exit {done.returncode}"


def _system(root: Path, name: str, only_print: bool) -> Step:
    target = SYSTEM_DIR / f"{name}.crt"
    update = shutil.which("update-ca-certificates") or "update-ca-certificates"
    commands = [f"cp {shlex.quote(str(root))} {shlex.quote(str(target))}", update]
    if shutil.which("update-ca-certificates") is None:
        return Step("system", False, [], "no update-ca-certificates here (not Debian or Ubuntu): add the root to "
                                         "the system's trust store as its documentation says")
    if only_print or os.geteuid() != 0:
        why = "" if only_print else " (as root: sudo)"
        return Step("system", False, commands, f"to trust it system-wide (curl, wget, OpenSSL), run{why}:")
    try:
        SYSTEM_DIR.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root, target)
        target.chmod(0o644)
    except OSError as exc:
        return Step("system", False, commands, f"could not write {target}: {exc}", error=True)
    failed = _run([update])
    if failed is not None:
        return Step("system", False, commands, f"update-ca-certificates failed: {failed}", error=True)
    return Step("system", True, commands, f"trusted system-wide ({target}, update-ca-certificates)")


def _nss(root: Path, name: str, db: Path, only_print: bool) -> Step:
    where = f"sql:{db}"
    commands = [f"mkdir -p {shlex.quote(str(db))}"]
    if not (db / "cert9.db").exists():
        commands.append(f"certutil -N -d {shlex.quote(where)} --empty-password")
    commands.append(f"certutil -A -d {shlex.quote(where)} -t C,, -n {shlex.quote(name)} -i {shlex.quote(str(root))}")
    certutil = shutil.which("certutil")
    if certutil is None:
        return Step("nss", False, ["apt-get install libnss3-tools", *commands],
                    f"certutil is missing: to trust it in Chromium ({db}), install it and run:")
    if only_print:
        return Step("nss", False, commands, f"to trust it in Chromium and Chrome ({db}), run:")
    try:
        db.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return Step("nss", False, commands, f"could not make {db}: {exc}", error=True)
    if not (db / "cert9.db").exists():
        failed = _run([certutil, "-N", "-d", where, "--empty-password"])
        if failed is not None:
            return Step("nss", False, commands, f"certutil could not make the database {db}: {failed}", error=True)
    failed = _run([certutil, "-A", "-d", where, "-t", "C,,", "-n", name, "-i", str(root)])
    if failed is not None:
        return Step("nss", False, commands, f"certutil could not add the root to {db}: {failed}", error=True)
    return Step("nss", True, commands, f"trusted in Chromium and Chrome ({db}; restart the browser)")


def trust(
    system: Annotated[bool, typer.Option("--system/--no-system",
                                         help="The system store (curl, OpenSSL): update-ca-certificates, as root.")]
    = True,
    nss: Annotated[bool, typer.Option("--nss/--no-nss", help="The user's NSS database (Chromium): certutil.")] = True,
    nss_db: Annotated[Path | None, typer.Option("--nss-db", help="The NSS database (default ~/.pki/nssdb).",
                                                show_default=False)] = None,
    only_print: Annotated[bool, typer.Option("--print", help="Print the commands; change nothing.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the outcome as JSON.")] = False,
) -> None:
    """Trust svc's local CA (the one `svc serve` makes with SVC_TLS_ISSUER=local, under
    SVC_DATA_DIR/tls/local-ca) where curl and Chromium look: the system store and ~/.pki/nssdb. Its
    name constraints let it sign only local names (localhost, test, ...) and the app domain."""
    settings = Settings()
    data_dir = settings.data_dir.resolve()
    root = root_path(data_dir)
    if not root.exists():
        message = (f"No local CA at {root}: svc makes it when it starts with SVC_TLS_ISSUER=local and an https port "
                   f"(make run EDGE_TLS_PORT=8443), with this SVC_DATA_DIR ({data_dir})")
        typer.echo(f"error: {message} (not_found)", err=True)  # as every command's error, --json or not
        raise typer.Exit(1)
    cert = x509.load_pem_x509_certificate(root.read_bytes())
    fingerprint = hashlib.sha256(cert.public_bytes(serialization.Encoding.DER)).hexdigest()
    name = f"svc-local-ca-{fingerprint[:12]}"
    steps: list[Step] = []
    if system:
        steps.append(_system(root, name, only_print))
    if nss:
        db = nss_db if nss_db is not None else Path(os.path.expanduser("~")) / ".pki" / "nssdb"
        steps.append(_nss(root, name, db, only_print))
    failed = any(s.error for s in steps)
    if as_json:
        print(json.dumps({"root": str(root), "fingerprint": fingerprint, "steps": [asdict(s) for s in steps]}))
    else:
        typer.echo(f"svc's local CA: {root} (SHA-256 {fingerprint})")
        for step in steps:
            typer.echo(f"- {step.store}: {step.message}")
            if not step.done:
                for command in step.commands:
                    typer.echo(f"    {command}")
        typer.echo(f"Other clients: curl --cacert {root}; Python: SSL_CERT_FILE={root}; Firefox: import it in "
                   f"Settings > Certificates (docs/tls.md).")
    if failed:
        raise typer.Exit(1)
