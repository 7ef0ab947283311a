"""DKIM: one key per mail domain, made on first need, its private half sealed by svc's keyring.

The signature's d= is the mail domain itself (SVC_MAIL_DOMAIN), not the project's address under it:
every project's address is a subdomain of it, so one published record (`<selector>._domainkey.<mail
domain>`) serves them all, and relaxed DMARC alignment holds for a From at any of them."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import dkim
import dkim.crypto
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa, utils
from sqlalchemy import select

from svc.db import dialect_insert
from svc.kit.clock import utcnow
from svc.kit.crypto import Keyring
from svc.kit.store_session import StoreSession
from svc.models import MailDomainKey

# The selector of the first key of a mail domain; a rotation would add `svc2` beside it.
SELECTOR = "svc1"
KEY_BITS = 2048
# The headers signed: what a receiver shows, and what a replay would change.
SIGNED_HEADERS = (b"from", b"to", b"cc", b"subject", b"date", b"message-id", b"reply-to", b"mime-version",
                  b"content-type", b"content-transfer-encoding", b"in-reply-to", b"references")


def _rsa_sign(digest: Any, private_key: dict[str, int]) -> bytes:
    """dkimpy's RSASSA-PKCS1-v1_5 signature of `digest`, by OpenSSL through `cryptography` instead
    of dkimpy's pure-Python RSA: 0.4 ms against 3-6 ms of CPU a message, which held the event loop
    (bench/mail_outbound.py). PKCS#1 v1.5 is deterministic, so the bytes are dkimpy's own
    (tests/email/test_outbound.py compares them). The key is svc's, made by `cryptography` and
    unsealed from the store: its validation is skipped."""
    numbers = rsa.RSAPrivateNumbers(
        p=private_key["prime1"], q=private_key["prime2"], d=private_key["privateExponent"],
        dmp1=private_key["exponent1"], dmq1=private_key["exponent2"], iqmp=private_key["coefficient"],
        public_numbers=rsa.RSAPublicNumbers(private_key["publicExponent"], private_key["modulus"]))
    key = numbers.private_key(unsafe_skip_rsa_key_validation=True)
    algorithm = hashes.SHA256() if digest.name.lower() == "sha256" else hashes.SHA1()  # noqa: S303 (rsa-sha1 is dkimpy's)
    return key.sign(digest.digest(), padding.PKCS1v15(), utils.Prehashed(algorithm))


# dkimpy signs through this name of its module (DomainSigner.gen_header); the one place it is set.
PURE_PYTHON_SIGN = dkim.crypto.RSASSA_PKCS1_v1_5_sign
dkim.RSASSA_PKCS1_v1_5_sign = _rsa_sign  # type: ignore[attr-defined]


@dataclass(frozen=True)
class SigningKey:
    domain: str
    selector: str
    private_pem: bytes


def seal_context(domain: str) -> str:
    """Bound to the sealed key: it cannot be moved to another domain's row."""
    return f"dkim:{domain}"


def record_text(public_key: str) -> str:
    """The TXT record at `<selector>._domainkey.<domain>`."""
    return f"v=DKIM1; k=rsa; p={public_key}"


async def published_key(session: StoreSession, domain: str) -> MailDomainKey | None:
    return (await session.scalars(select(MailDomainKey).where(MailDomainKey.domain == domain))).first()


async def signing_key(session: StoreSession, keys: Keyring, domain: str) -> SigningKey:
    """The domain's key, made now when it has none (two first sends at once: one insert wins,
    both sign with the stored key)."""
    row = await published_key(session, domain)
    if row is None:
        await _make_key(session, keys, domain)
        row = await published_key(session, domain)
        assert row is not None
    return SigningKey(domain=domain, selector=row.selector,
                      private_pem=keys.unseal(row.sealed_key, context=seal_context(domain)))


async def _make_key(session: StoreSession, keys: Keyring, domain: str) -> None:
    private = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption())
    der = private.public_key().public_bytes(serialization.Encoding.DER,
                                            serialization.PublicFormat.SubjectPublicKeyInfo)
    insert = dialect_insert(session, MailDomainKey.__table__).values(
        domain=domain, selector=SELECTOR, sealed_key=keys.seal(pem, context=seal_context(domain)),
        public_key=base64.b64encode(der).decode(), created_at=utcnow())
    await session.execute(insert.on_conflict_do_nothing(index_elements=["domain"]))


def sign(raw: bytes, key: SigningKey) -> bytes:
    """`raw` (CRLF line ends) with its DKIM-Signature header first (relaxed/relaxed: survives the
    whitespace changes relays make)."""
    header: bytes = dkim.sign(raw, key.selector.encode(), key.domain.encode(), key.private_pem,
                       canonicalize=(b"relaxed", b"relaxed"),
                       include_headers=[h for h in SIGNED_HEADERS if _has_header(raw, h)])
    return header + raw


def _has_header(raw: bytes, name: bytes) -> bool:
    head = raw.split(b"\r\n\r\n", 1)[0].lower()
    return head.startswith(name + b":") or (b"\r\n" + name + b":") in head
