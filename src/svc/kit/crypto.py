"""Keys derived from the one secret key: sealing secrets at rest (AES-GCM) and signing cookies."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
from pathlib import Path

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from svc.settings import Settings

_SEAL_VERSION = b"\x01"


def load_or_create_secret_key(settings: Settings) -> bytes:
    """SVC_SECRET_KEY when set; else a key generated once into SVC_DATA_DIR/secret.key (0600)."""
    if settings.secret_key is not None:
        return settings.secret_key.get_secret_value().encode()
    path = settings.data_dir / "secret.key"
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read_key(path)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_urlsafe(48) + "\n")
    return _read_key(path)


def _read_key(path: Path) -> bytes:
    value = path.read_text().strip()
    if len(value) < 32:
        raise RuntimeError(f"{path} holds no usable secret key")
    return value.encode()


def _derive(secret: bytes, purpose: str) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=purpose.encode()).derive(secret)


class Keyring:
    def __init__(self, secret: bytes) -> None:
        self._seal = AESGCM(_derive(secret, "svc seal v1"))
        self._sign = _derive(secret, "svc sign v1")

    def seal(self, plaintext: bytes, *, context: str) -> bytes:
        """AES-GCM; `context` (e.g. the project id and name) is bound as associated data, so a
        sealed value cannot be moved to another row."""
        nonce = os.urandom(12)
        return _SEAL_VERSION + nonce + self._seal.encrypt(nonce, plaintext, context.encode())

    def unseal(self, sealed: bytes, *, context: str) -> bytes:
        if sealed[:1] != _SEAL_VERSION:
            raise ValueError("unknown sealing version")
        return self._seal.decrypt(sealed[1:13], sealed[13:], context.encode())

    def sign(self, message: str) -> str:
        mac = hmac.new(self._sign, message.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()

    def verify(self, message: str, signature: str) -> bool:
        return hmac.compare_digest(self.sign(message), signature)
