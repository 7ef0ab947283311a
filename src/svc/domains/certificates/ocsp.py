"""OCSP stapling (RFC 6960, 6066): for a certificate whose issuer names an OCSP responder, svc asks
the responder for the certificate's status and the edge staples the signed answer to its handshakes,
so visitors' browsers need not ask the CA themselves (faster, and private). The answer is kept in
the store with the certificate and asked again halfway through its validity. An answer that could
not be had, or says anything but "good", is not stapled (the handshake goes on without one).

Let's Encrypt stopped naming a responder in 2025; other CAs (and private ones) still do."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

import httpx
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.x509 import ocsp
from cryptography.x509.oid import AuthorityInformationAccessOID

log = logging.getLogger("svc.certificates")

TIMEOUT_SECONDS = 10.0
# When the responder gives no nextUpdate: ask again after this long.
DEFAULT_VALIDITY = timedelta(hours=24)
RETRY = timedelta(hours=1)


@dataclass(frozen=True)
class Stapled:
    """A responder's answer for one certificate: the DER to staple, until when it holds."""

    der: bytes
    valid_until: datetime
    refresh_at: datetime


class OcspError(Exception):
    """No usable answer: the words say why (logged; the handshake goes on without a staple).
    `revoked`: the CA says the certificate is revoked (it is to be replaced)."""

    def __init__(self, message: str, *, revoked: bool = False) -> None:
        super().__init__(message)
        self.revoked = revoked


def responder(fullchain_pem: str) -> str | None:
    """The OCSP responder the leaf certificate names (Authority Information Access), if any."""
    try:
        leaf = x509.load_pem_x509_certificate(fullchain_pem.encode())
        access = leaf.extensions.get_extension_for_class(x509.AuthorityInformationAccess).value
    except (ValueError, x509.ExtensionNotFound):
        return None
    for description in access:
        if description.access_method == AuthorityInformationAccessOID.OCSP:
            return str(description.access_location.value)
    return None


async def fetch(fullchain_pem: str, *, now: datetime) -> Stapled:
    """Ask the responder the leaf names about the leaf (its issuer is the chain's next
    certificate); OcspError when there is no good answer."""
    url = responder(fullchain_pem)
    try:
        chain = x509.load_pem_x509_certificates(fullchain_pem.encode())
    except ValueError:
        raise OcspError("the certificate's chain cannot be read") from None
    if url is None or len(chain) < 2 or not url.startswith(("http://", "https://")):
        raise OcspError("the certificate names no OCSP responder, or its chain has no issuer")
    leaf, issuer = chain[0], chain[1]
    request = ocsp.OCSPRequestBuilder().add_certificate(leaf, issuer, hashes.SHA1()).build()  # noqa: S303 - RFC 6960's CertID
    try:
        async with httpx.AsyncClient(timeout=TIMEOUT_SECONDS, trust_env=False) as http:
            answer = await http.post(url, content=request.public_bytes(serialization.Encoding.DER),
                                     headers={"content-type": "application/ocsp-request"})
    except httpx.HTTPError as exc:
        raise OcspError(f"the OCSP responder at {url} did not answer ({type(exc).__name__})") from None
    if answer.status_code != 200:
        raise OcspError(f"the OCSP responder at {url} answered {answer.status_code}")
    try:
        response = ocsp.load_der_ocsp_response(answer.content)
    except ValueError:
        raise OcspError(f"the OCSP responder at {url} answered something that is not OCSP") from None
    if response.response_status != ocsp.OCSPResponseStatus.SUCCESSFUL:
        raise OcspError(f"the OCSP responder at {url} answered {response.response_status.name}")
    if response.serial_number != leaf.serial_number:
        raise OcspError(f"the OCSP responder at {url} answered about another certificate")
    if response.certificate_status != ocsp.OCSPCertStatus.GOOD:
        _check_signature(response, issuer)
        raise OcspError(f"the OCSP responder at {url} says the certificate is {response.certificate_status.name}",
                        revoked=response.certificate_status == ocsp.OCSPCertStatus.REVOKED)
    _check_signature(response, issuer)
    this_update = response.this_update_utc
    valid_until = response.next_update_utc or (this_update + DEFAULT_VALIDITY)
    if valid_until <= now:
        raise OcspError(f"the OCSP responder at {url} answered with an answer already out of date")
    return Stapled(der=answer.content, valid_until=valid_until,
                   refresh_at=max(now + RETRY / 4, this_update + (valid_until - this_update) / 2))


def _check_signature(response: ocsp.OCSPResponse, issuer: x509.Certificate) -> None:
    """Signed by the issuer, or by a responder certificate the issuer signed (RFC 6960 4.2.2.2)."""
    signer = issuer
    for cert in response.certificates:
        if cert.issuer == issuer.subject:
            try:
                cert.verify_directly_issued_by(issuer)
            except (ValueError, TypeError, InvalidSignature):
                continue
            signer = cert
    try:
        key = signer.public_key()
        algorithm = response.signature_hash_algorithm
        if isinstance(key, rsa.RSAPublicKey) and algorithm is not None:
            key.verify(response.signature, response.tbs_response_bytes, padding.PKCS1v15(), algorithm)
        elif isinstance(key, ec.EllipticCurvePublicKey) and algorithm is not None:
            key.verify(response.signature, response.tbs_response_bytes, ec.ECDSA(algorithm))
        else:
            raise OcspError("the OCSP answer is signed with a key svc does not check")
    except InvalidSignature:
        raise OcspError("the OCSP answer's signature does not verify") from None
