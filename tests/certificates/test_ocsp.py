"""OCSP stapling end to end: a certificate whose issuer names a responder (a real HTTP server
speaking OCSP, signing with the issuer's key), svc asking it through its job and keeping the answer,
and the edge (a real nginx) stapling it to the handshake of a client that asks (openssl s_client
-status). A responder that says "revoked" or does not answer: nothing stapled, said in the log."""

from __future__ import annotations

import asyncio
import datetime
import socket
import ssl
import subprocess
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509 import ocsp
from cryptography.x509.oid import AuthorityInformationAccessOID, NameOID
from sqlalchemy import select

from svc.adapters.acme.port import Issued
from svc.adapters.edge.port import ServedCertificate
from svc.domains.certificates import jobs, service
from svc.domains.certificates.service import EdgeCertificates
from svc.edge import NginxEdge, tls
from svc.edge.component import EdgeRouting
from svc.kit.clock import utcnow
from svc.models import Certificate
from svc.uow import Tx, unit_of_work
from tests.edge.conftest import NGINX, edge_settings
from tests.support import components
from tests.support.api import run_due_jobs, running_svc
from tests.support.config import configured
from tests.support.ports import free_port

pytestmark = components.NGINX

NAME = "www.stapled.test"


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


class Responder:
    """An OCSP responder for one issuer: answers `status` for every request, signed by the issuer."""

    def __init__(self) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        self.cert = (x509.CertificateBuilder().subject_name(_name("Test OCSP CA")).issuer_name(_name("Test OCSP CA"))
                     .public_key(self.key.public_key()).serial_number(1)
                     .not_valid_before(now - datetime.timedelta(days=1))
                     .not_valid_after(now + datetime.timedelta(days=30))
                     .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                     .sign(self.key, hashes.SHA256()))
        self.status = ocsp.OCSPCertStatus.GOOD
        self.asked = 0
        self.url = ""

    def leaf(self, name: str) -> tuple[str, str]:
        """(chain PEM: leaf then issuer, key PEM) of a certificate for `name` naming this responder."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        leaf = (x509.CertificateBuilder().subject_name(_name(name)).issuer_name(self.cert.subject)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=10))
                .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
                .add_extension(x509.AuthorityInformationAccess([x509.AccessDescription(
                    AuthorityInformationAccessOID.OCSP, x509.UniformResourceIdentifier(self.url))]), critical=False)
                .sign(self.key, hashes.SHA256()))
        chain = b"".join(c.public_bytes(serialization.Encoding.PEM) for c in (leaf, self.cert)).decode()
        return chain, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                        serialization.NoEncryption()).decode()

    def answer(self, body: bytes) -> bytes:
        self.asked += 1
        request = ocsp.load_der_ocsp_request(body)
        now = datetime.datetime.now(datetime.UTC)
        revoked = self.status == ocsp.OCSPCertStatus.REVOKED
        # The builder wants the certificate itself; a stand-in with the asked serial will do.
        stand_in = (x509.CertificateBuilder().subject_name(_name("asked")).issuer_name(self.cert.subject)
                    .public_key(self.key.public_key()).serial_number(request.serial_number)
                    .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
                    .sign(self.key, hashes.SHA256()))
        response = (ocsp.OCSPResponseBuilder()
                    .add_response(cert=stand_in, issuer=self.cert, algorithm=hashes.SHA1(), cert_status=self.status,
                                  this_update=now - datetime.timedelta(minutes=1),
                                  next_update=now + datetime.timedelta(days=1),
                                  revocation_time=now if revoked else None,
                                  revocation_reason=x509.ReasonFlags.key_compromise if revoked else None)
                    .responder_id(ocsp.OCSPResponderEncoding.HASH, self.cert)
                    .sign(self.key, hashes.SHA256()))
        return response.public_bytes(serialization.Encoding.DER)


@contextmanager
def running_responder() -> Iterator[Responder]:
    responder = Responder()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            data = responder.answer(body)
            self.send_response(200)
            self.send_header("content-type", "application/ocsp-response")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    responder.url = f"http://127.0.0.1:{server.server_address[1]}/ocsp"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield responder
    finally:
        server.shutdown()
        server.server_close()


def _status(port: int) -> str:
    """What openssl says of the OCSP answer stapled to a handshake for NAME."""
    done = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-servername", NAME, "-status"],
                          input=b"", capture_output=True, timeout=30)
    return done.stdout.decode(errors="replace")


async def test_an_ocsp_answer_is_fetched_kept_and_stapled(tmp_path: Path) -> None:
    tls_port = free_port()
    settings = edge_settings(tmp_path / "data", edge_tls_port=tls_port)
    with running_responder() as responder:
        chain, key = responder.leaf(NAME)
        async with running_svc(settings) as svc:
            now = utcnow()
            async with unit_of_work(svc.ctx, Tx.WRITE) as uow:
                uow.session.add(Certificate(name=NAME, kind="host", status="issuing", failures=0, created_at=now,
                                            updated_at=now))
            async with unit_of_work(svc.ctx, Tx.WRITE) as uow:
                issued = Issued(fullchain_pem=chain, key_pem=key, not_before=now,
                                        not_after=now + datetime.timedelta(days=10), issuer="Test OCSP CA",
                                        names=(NAME,))
                await service.record_issued(uow, NAME, issued, now + datetime.timedelta(days=5))
            async with unit_of_work(svc.ctx, Tx.WRITE) as uow:
                assert await jobs.schedule_ocsp(uow) == 1
            await run_due_jobs(svc)
            async with svc.ctx.db.transaction(write=False) as s:
                row = (await s.scalars(select(Certificate))).one()
            assert responder.asked == 1 and row.ocsp_response and row.ocsp_valid_until > now
            # Asked again halfway through the answer's validity, not at every cycle.
            assert row.ocsp_refresh_at is not None and row.ocsp_refresh_at > now + datetime.timedelta(hours=11)
            async with unit_of_work(svc.ctx, Tx.WRITE) as uow:
                assert await jobs.schedule_ocsp(uow) == 0

            assert NGINX is not None
            edge = NginxEdge(configured(settings), EdgeRouting(svc.ctx), api_url="http://127.0.0.1:9", binary=NGINX,
                             certificates=EdgeCertificates(svc.ctx))
            await edge.start()
            try:
                said = await asyncio.to_thread(_status, tls_port)
                assert "OCSP Response Status: successful" in said and "Cert Status: good" in said, said

                # Revoked: nothing stapled any more, the reason said, a new certificate ordered at once.
                responder.status = ocsp.OCSPCertStatus.REVOKED
                async with unit_of_work(svc.ctx, Tx.WRITE) as uow:
                    (await uow.session.get(Certificate, NAME)).ocsp_refresh_at = utcnow()  # type: ignore[union-attr]
                    assert await jobs.schedule_ocsp(uow) == 1
                await run_due_jobs(svc)
                async with svc.ctx.db.transaction(write=False) as s:
                    again = (await s.scalars(select(Certificate))).one()
                assert responder.asked == 2 and again.ocsp_response is None
                assert again.last_error is not None and "says the certificate is REVOKED" in again.last_error
                assert again.renew_at is not None and again.renew_at <= utcnow()
                for _ in range(100):  # the edge follows within its poll interval
                    said = await asyncio.to_thread(_status, tls_port)
                    if "OCSP response: no response sent" in said:
                        break
                    await asyncio.sleep(0.1)
                assert "OCSP response: no response sent" in said, said
            finally:
                await edge.stop()


def _served_leaf(port: int) -> bytes:
    """The certificate (DER) the edge shows a client asking for NAME."""
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
            ctx.wrap_socket(raw, server_hostname=NAME) as conn:
        der = conn.getpeercert(binary_form=True)
    assert der is not None
    return der


async def test_a_changed_certificate_is_served_whatever_its_checksum(tmp_path: Path) -> None:
    """Each nginx worker keeps its parsed copy of an entry until the entry's checksum (its flags in
    svc_certs) changes. The flags are a C int: a crc32 >= 2^31 used to be stored as INT_MIN, so two
    such entries looked alike and a worker kept the old chain, key and OCSP staple. Both certificates
    here have such a checksum, which the revocation test above only met one run in four."""
    tls_port = free_port()
    settings = edge_settings(tmp_path / "data", edge_tls_port=tls_port)

    def high_checksum(responder: Responder) -> tuple[str, str]:
        for _ in range(100):  # about half of all entries
            chain, key = responder.leaf(NAME)
            payload = tls.line(ServedCertificate(name=NAME, fullchain_pem=chain, key_pem=key)).split("\t", 2)[2]
            if zlib.crc32(payload.encode()) >= 2**31:
                return chain, key
        raise AssertionError("no certificate with a checksum >= 2^31")

    def leaf_der(chain: str) -> bytes:
        return x509.load_pem_x509_certificate(chain.encode()).public_bytes(serialization.Encoding.DER)

    with running_responder() as responder:
        first, second = high_checksum(responder), high_checksum(responder)
        async with running_svc(settings) as svc:
            now = utcnow()
            async with unit_of_work(svc.ctx, Tx.WRITE) as uow:
                uow.session.add(Certificate(name=NAME, kind="host", status="issuing", failures=0, created_at=now,
                                            updated_at=now))

            async def issue(chain: str, key: str) -> None:
                at = utcnow()
                async with unit_of_work(svc.ctx, Tx.WRITE) as uow:
                    await service.record_issued(uow, NAME, Issued(
                        fullchain_pem=chain, key_pem=key, not_before=at, not_after=at + datetime.timedelta(days=10),
                        issuer="Test OCSP CA", names=(NAME,)), at + datetime.timedelta(days=5))

            await issue(*first)
            assert NGINX is not None
            edge = NginxEdge(configured(settings), EdgeRouting(svc.ctx), api_url="http://127.0.0.1:9", binary=NGINX,
                             certificates=EdgeCertificates(svc.ctx))
            await edge.start()
            try:
                assert await asyncio.to_thread(_served_leaf, tls_port) == leaf_der(first[0])  # parsed, kept
                await issue(*second)  # renewed: the edge follows within its poll interval
                served = b""
                for _ in range(100):
                    served = await asyncio.to_thread(_served_leaf, tls_port)
                    if served == leaf_der(second[0]):
                        break
                    await asyncio.sleep(0.1)
                assert served == leaf_der(second[0]), "the edge still serves the certificate it had parsed"
            finally:
                await edge.stop()


async def test_a_certificate_without_a_responder_is_served_without_a_staple(tmp_path: Path) -> None:
    from svc.domains.certificates import ocsp as svc_ocsp

    with running_responder() as responder:
        chain, _ = responder.leaf(NAME)
    assert svc_ocsp.responder(chain) == responder.url
    plain = responder.cert.public_bytes(serialization.Encoding.PEM).decode()  # the issuer alone: no AIA
    assert svc_ocsp.responder(plain) is None
    with pytest.raises(svc_ocsp.OcspError, match="names no OCSP responder"):
        await svc_ocsp.fetch(plain, now=utcnow())
    # The responder gone: said in words.
    with pytest.raises(svc_ocsp.OcspError, match="did not answer"):
        await svc_ocsp.fetch(chain, now=utcnow())
