"""SNS for tests: a signer with a key of its own, and a local HTTPS server (a test CA's certificate
for 127.0.0.1) that serves the signing certificate and answers subscription confirmations, keeping
every request it saw.

    with SnsServer() as server:             # https://127.0.0.1:<free port>
        server.trust(svc.ctx)                # the app accepts this origin (SnsState.test_trust)
        body = server.notification(TOPIC, {"notificationType": "Bounce", ...})
        server.requests                      # the paths it was asked for

The trust is the test-only field of the app's SNS state: the production rule (SNS's regional host)
is not widened by any setting (src/svc/domains/email/sns.py).
"""

from __future__ import annotations

import base64
import functools
import ipaddress
import json
import ssl
import tempfile
import threading
import uuid
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlencode

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import NameOID

from svc.context import AppContext
from svc.domains.email.sns import SnsState, TestTrust

CERT_PATH = "/SimpleNotificationService-0123456789abcdef.pem"


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _cert(subject: str, key: rsa.RSAPrivateKey, issuer: str, issuer_key: rsa.RSAPrivateKey, *, ca: bool,
          ip: str | None = None) -> x509.Certificate:
    now = datetime.now(UTC)
    builder = (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(_name(issuer))
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - timedelta(days=1)).not_valid_after(now + timedelta(days=30))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ip is not None:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(ip))]),
                                        critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


@functools.cache
def _keys() -> tuple[rsa.RSAPrivateKey, rsa.RSAPrivateKey, rsa.RSAPrivateKey]:
    """The test CA's key, the HTTPS server's, the signing key (made once per test process)."""
    return tuple(rsa.generate_private_key(public_exponent=65537, key_size=2048)  # type: ignore[return-value]
                 for _ in range(3))


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


class SnsServer:
    """A local HTTPS server playing SNS's regional host, and SNS's signer."""

    def __init__(self) -> None:
        ca_key, server_key, self.signing_key = _keys()
        self.ca = _cert("svc test CA", ca_key, "svc test CA", ca_key, ca=True)
        server_cert = _cert("127.0.0.1", server_key, "svc test CA", ca_key, ca=False, ip="127.0.0.1")
        self.signing_cert = _cert("sns.amazonaws.com", self.signing_key, "svc test CA", ca_key, ca=False)
        self.requests: list[str] = []
        # What the certificate's path answers instead of the certificate, when set (a test's failure).
        self.cert_body: bytes | None = None
        # Where the certificate's path redirects, when set.
        self.cert_redirect: str | None = None
        self._dir = tempfile.TemporaryDirectory(prefix="svc-sns-")
        chain, keyfile = Path(self._dir.name, "server.pem"), Path(self._dir.name, "server.key")
        chain.write_bytes(_pem(server_cert))
        keyfile.write_bytes(server_key.private_bytes(serialization.Encoding.PEM,
                                                     serialization.PrivateFormat.PKCS8,
                                                     serialization.NoEncryption()))
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(chain, keyfile)
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.requests.append(self.path)
                if self.path == CERT_PATH and outer.cert_redirect is not None:
                    self.send_response(302)
                    self.send_header("Location", outer.cert_redirect)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if self.path == CERT_PATH:
                    body = _pem(outer.signing_cert) if outer.cert_body is None else outer.cert_body
                else:
                    body = b"<ConfirmSubscriptionResponse/>"
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.socket = tls.wrap_socket(self._http.socket, server_side=True)
        self.origin = f"https://127.0.0.1:{self._http.server_address[1]}"
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    def __enter__(self) -> SnsServer:
        self._thread.start()
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._dir.cleanup()

    @property
    def cert_url(self) -> str:
        return self.origin + CERT_PATH

    def client_tls(self) -> ssl.SSLContext:
        """What trusts this server: the test CA only."""
        return ssl.create_default_context(cadata=_pem(self.ca).decode())

    def trust(self, ctx: AppContext) -> None:
        """The app accepts this server's origin as it accepts SNS's regional host."""
        ctx.state_of(SnsState).test_trust = TestTrust(origin=self.origin, verify=self.client_tls())

    def subscribe_url(self, topic: str, origin: str | None = None) -> str:
        return (origin or self.origin) + "/?" + urlencode({"Action": "ConfirmSubscription", "TopicArn": topic,
                                                           "Token": "2336412f37fb687f5d51e6e2425"})

    def signed(self, fields: dict[str, str], *, version: str = "1", cert_url: str | None = None,
               key: rsa.RSAPrivateKey | None = None) -> dict[str, str]:
        """`fields` with SNS's signature (SignatureVersion 1: SHA1withRSA, 2: SHA256withRSA)."""
        names = (("Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type")
                 if fields["Type"] == "Notification"
                 else ("Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"))
        text = "".join(f"{n}\n{fields[n]}\n" for n in names if n in fields).encode()
        algorithm = hashes.SHA1() if version == "1" else hashes.SHA256()
        signature = (key or self.signing_key).sign(text, padding.PKCS1v15(), algorithm)
        return fields | {"SignatureVersion": version, "Signature": base64.b64encode(signature).decode(),
                         "SigningCertURL": cert_url or self.cert_url}

    def notification(self, topic: str, message: dict[str, Any] | str, *, subject: str | None = None,
                     **sign: Any) -> dict[str, str]:
        fields = {"Type": "Notification", "MessageId": str(uuid.uuid4()), "TopicArn": topic,
                  "Message": message if isinstance(message, str) else json.dumps(message),
                  "Timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
                  "UnsubscribeURL": self.origin + "/?Action=Unsubscribe"}
        if subject is not None:
            fields["Subject"] = subject
        return self.signed(fields, **sign)

    def confirmation(self, topic: str, *, subscribe_url: str | None = None, **sign: Any) -> dict[str, str]:
        url = subscribe_url or self.subscribe_url(topic)
        fields = {"Type": "SubscriptionConfirmation", "MessageId": str(uuid.uuid4()), "TopicArn": topic,
                  "Token": "2336412f37fb687f5d51e6e2425",
                  "Message": f"You have chosen to subscribe to the topic {topic}.\nTo confirm the subscription, "
                             "visit the SubscribeURL included in this message.",
                  "SubscribeURL": url, "Timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")}
        return self.signed(fields, **sign)


def ses_event(kind: str, *, message_id: str | None = None, provider_id: str = "0100018c-test-000000",
              recipients: tuple[str, ...] = ("jane@example.com",), bounce_type: str = "Permanent",
              key: str = "notificationType", headers_only: bool = False) -> dict[str, Any]:
    """An SES notification (key notificationType) or event-publishing record (key eventType) of
    `kind` (Bounce, Complaint, Delivery) for the message svc sent with `message_id` (without <>)."""
    mail: dict[str, Any] = {"timestamp": "2026-11-29T14:59:38.237Z", "source": "noreply@site.acme.mail.svc.test",
                            "messageId": provider_id, "destination": list(recipients)}
    if message_id is not None:
        mail["headers"] = [{"name": "From", "value": "noreply@site.acme.mail.svc.test"},
                           {"name": "Message-ID", "value": f"<{message_id}>"}]
        if not headers_only:
            mail["commonHeaders"] = {"messageId": f"<{message_id}>", "subject": "hello"}
    event: dict[str, Any] = {key: kind, "mail": mail}
    if kind == "Bounce":
        event["bounce"] = {"bounceType": bounce_type, "bounceSubType": "General",
                           "bouncedRecipients": [{"emailAddress": r, "status": "5.1.1", "action": "failed",
                                                  "diagnosticCode": "smtp; 550 5.1.1 user unknown"}
                                                 for r in recipients],
                           "timestamp": "2026-11-29T14:59:38.237Z", "feedbackId": "feedback-1"}
    elif kind == "Complaint":
        event["complaint"] = {"complainedRecipients": [{"emailAddress": r} for r in recipients],
                              "complaintFeedbackType": "abuse", "timestamp": "2026-11-29T14:59:38.237Z",
                              "feedbackId": "feedback-2"}
    elif kind == "Delivery":
        event["delivery"] = {"timestamp": "2026-11-29T14:59:38.237Z", "recipients": list(recipients),
                             "smtpResponse": "250 ok", "processingTimeMillis": 546}
    return event
