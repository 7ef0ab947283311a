"""Amazon SNS messages, as the mail provider's notifications arrive at /v1/hooks/ses: reading one,
checking where its signing certificate comes from, checking its signature, and confirming a
subscription (docs/email.md, "Provider notifications").

The trust is the TLS of SNS's own regional host: a certificate is fetched only from
`https://sns.<region>.amazonaws.com[.cn]/SimpleNotificationService-<hex>.pem`, and a subscription
confirmed only by a GET to that host. No other host is ever fetched (an attacker would otherwise
pick what svc fetches, and sign with a key of their own). The one exception is a test's own server,
trusted through `SnsState.test_trust`, a field only a test sets on its app's state: no setting or
variable reaches it, so a production svc has no way to widen the rule."""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
import re
import ssl
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import parse_qs, urlsplit

import httpx
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey

from svc.context import AppContext
from svc.domains.email import errors

log = logging.getLogger("svc.email")

# SNS's regional host: sns.us-east-1.amazonaws.com, sns.us-gov-west-1.amazonaws.com,
# sns.cn-north-1.amazonaws.com.cn. Matched against the URL's whole authority: no port, no user.
SNS_HOST = re.compile(r"sns\.[a-z]{2}(?:-[a-z]+)+-[0-9]{1,2}\.amazonaws\.com(?:\.cn)?")
# The signing certificate's path on that host.
CERT_PATH = re.compile(r"/SimpleNotificationService-[0-9a-f]{1,64}\.pem")
# A certificate is about 2 KB; more is not one.
MAX_CERT_BYTES = 16 * 1024
# The whole fetch of a certificate, or the GET confirming a subscription, connection included.
FETCH_SECONDS = 5.0
# Certificates kept per app (by URL: SNS names a new key with a new URL, so a kept one never goes stale).
MAX_CACHED = 32

NOTIFICATION = "Notification"
SUBSCRIPTION_CONFIRMATION = "SubscriptionConfirmation"
UNSUBSCRIBE_CONFIRMATION = "UnsubscribeConfirmation"
_TYPES = (NOTIFICATION, SUBSCRIPTION_CONFIRMATION, UNSUBSCRIBE_CONFIRMATION)

# The fields signed, in this order, "name\nvalue\n" each (SNS's string to sign). A notification's
# Subject only when present.
_SIGNED_NOTIFICATION = ("Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type")
_SIGNED_CONFIRMATION = ("Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type")
_HASHES: dict[str, type[hashes.HashAlgorithm]] = {"1": hashes.SHA1, "2": hashes.SHA256}


@dataclass(frozen=True)
class TestTrust:
    """Tests only: an origin (`https://127.0.0.1:<port>`) whose certificates and subscribe URLs are
    accepted besides SNS's own (the path rule unchanged), and how to verify its TLS (a test CA)."""

    __test__ = False  # not a pytest class

    origin: str
    verify: ssl.SSLContext | bool = True


class SnsState:
    """This app's SNS state (ctx.state_of): the signing keys fetched, by URL. `test_trust` is set
    by tests only (module docstring); nothing in svc assigns it."""

    def __init__(self) -> None:
        self.keys: dict[str, RSAPublicKey] = {}
        self.test_trust: TestTrust | None = None


@dataclass(frozen=True)
class SnsMessage:
    """One message SNS posted, its fields as strings."""

    type: str
    topic_arn: str
    message: str
    fields: dict[str, str]

    @property
    def subscribe_url(self) -> str:
        return self.fields.get("SubscribeURL", "")


def parse(body: bytes) -> SnsMessage:
    """The body SNS posts (JSON, sent as text/plain); 400 when it is not an SNS message."""
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise errors.MalformedNotification("The body is not JSON") from None
    if not isinstance(doc, dict):
        raise errors.MalformedNotification("The body is not a JSON object")
    fields = {k: v for k, v in doc.items() if isinstance(k, str) and isinstance(v, str)}
    kind = fields.get("Type", "")
    if kind not in _TYPES:
        raise errors.MalformedNotification("Type is not Notification, SubscriptionConfirmation or "
                                           "UnsubscribeConfirmation")
    needed = _SIGNED_NOTIFICATION if kind == NOTIFICATION else _SIGNED_CONFIRMATION
    missing = [name for name in (*needed, "Signature", "SignatureVersion", "SigningCertURL")
               if name != "Subject" and name not in fields]
    if missing:
        raise errors.MalformedNotification(f"The message has no {', '.join(missing)}")
    return SnsMessage(type=kind, topic_arn=fields["TopicArn"], message=fields["Message"], fields=fields)


def string_to_sign(msg: SnsMessage) -> bytes:
    names = _SIGNED_NOTIFICATION if msg.type == NOTIFICATION else _SIGNED_CONFIRMATION
    return "".join(f"{name}\n{msg.fields[name]}\n" for name in names if name in msg.fields).encode()


def _on_sns_host(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme == "https" and SNS_HOST.fullmatch(parts.netloc) is not None


def _on_test_origin(state: SnsState, url: str) -> bool:
    trust = state.test_trust
    if trust is None:
        return False
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" == trust.origin


def cert_url_allowed(state: SnsState, url: str) -> bool:
    """https on SNS's regional host (or the test's origin), the certificate's path, nothing else."""
    parts = urlsplit(url)
    if parts.query or parts.fragment or CERT_PATH.fullmatch(parts.path) is None:
        return False
    return _on_sns_host(url) or _on_test_origin(state, url)


def subscribe_url_allowed(state: SnsState, url: str, topic: str) -> bool:
    """The same host rule; the URL confirms a subscription to svc's own topic and nothing else."""
    parts = urlsplit(url)
    if parts.fragment or parts.path != "/":
        return False
    query = parse_qs(parts.query)
    if query.get("Action") != ["ConfirmSubscription"] or query.get("TopicArn") != [topic]:
        return False
    return _on_sns_host(url) or _on_test_origin(state, url)


def _verify_of(state: SnsState, url: str) -> ssl.SSLContext | bool:
    trust = state.test_trust
    return trust.verify if trust is not None and _on_test_origin(state, url) else True


async def _get(state: SnsState, url: str, limit: int) -> bytes:
    """GET `url` within FETCH_SECONDS in all, its body up to `limit` bytes; no redirect is
    followed (it could lead to any host). 502 when it fails."""
    try:
        async with asyncio.timeout(FETCH_SECONDS), httpx.AsyncClient(
                timeout=FETCH_SECONDS, trust_env=False, follow_redirects=False,
                verify=_verify_of(state, url)) as http, http.stream("GET", url) as response:
            if response.status_code != 200:
                raise errors.ProviderUnreachable(f"{urlsplit(url).netloc} answered {response.status_code}")
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > limit:
                    raise errors.ProviderUnreachable(f"{urlsplit(url).netloc} answered more than {limit} bytes")
            return bytes(body)
    except (httpx.HTTPError, TimeoutError, ssl.SSLError, OSError) as exc:
        log.warning("SNS: GET %s failed: %s", url, exc)
        raise errors.ProviderUnreachable(f"{urlsplit(url).netloc} did not answer") from None


def _public_key(pem: bytes) -> RSAPublicKey:
    try:
        cert = x509.load_pem_x509_certificate(pem)
    except ValueError:
        raise errors.BadSignature("The signing certificate is not a PEM certificate") from None
    now = datetime.now(UTC)
    if not cert.not_valid_before_utc <= now <= cert.not_valid_after_utc:
        raise errors.BadSignature("The signing certificate is not valid now")
    key = cert.public_key()
    if not isinstance(key, RSAPublicKey):
        raise errors.BadSignature("The signing certificate's key is not RSA")
    return key


async def signing_key(ctx: AppContext, url: str) -> RSAPublicKey:
    state = ctx.state_of(SnsState)
    key = state.keys.get(url)
    if key is None:
        key = _public_key(await _get(state, url, MAX_CERT_BYTES))
        if len(state.keys) >= MAX_CACHED:
            state.keys.pop(next(iter(state.keys)))
        state.keys[url] = key
    return key


async def verified(ctx: AppContext, body: bytes, topic: str) -> SnsMessage:
    """The message in `body` once it is shown to be SNS's, for `topic`: 400 malformed, 403 another
    topic, a certificate URL off SNS's host (never fetched) or a signature that does not verify,
    502 when the certificate cannot be fetched."""
    msg = parse(body)
    # The topic first: a message for another topic costs no fetch.
    if msg.topic_arn != topic:
        raise errors.WrongTopic()
    url = msg.fields["SigningCertURL"]
    if not cert_url_allowed(ctx.state_of(SnsState), url):
        raise errors.BadCertificateUrl()
    algorithm = _HASHES.get(msg.fields["SignatureVersion"])
    if algorithm is None:
        raise errors.BadSignature("SignatureVersion is neither 1 nor 2")
    try:
        signature = base64.b64decode(msg.fields["Signature"], validate=True)
    except (binascii.Error, ValueError):
        raise errors.BadSignature("The signature is not base64") from None
    key = await signing_key(ctx, url)
    try:
        key.verify(signature, string_to_sign(msg), padding.PKCS1v15(), algorithm())
    except InvalidSignature:
        raise errors.BadSignature() from None
    return msg


async def confirm_subscription(ctx: AppContext, msg: SnsMessage, topic: str) -> None:
    """GET the SubscribeURL of a verified confirmation (403 when it is off SNS's host: never fetched)."""
    state = ctx.state_of(SnsState)
    url = msg.subscribe_url
    if not subscribe_url_allowed(state, url, topic):
        raise errors.BadSubscribeUrl()
    await _get(state, url, 64 * 1024)
    log.info("SNS: confirmed the subscription to %s", topic)
