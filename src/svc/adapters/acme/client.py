"""The Acme port on `acme` + `josepy`, the ACME library under certbot. It is synchronous (requests):
each call runs in a thread.

- The account key is RSA 2048 (RS256, what every CA accepts), made once when the caller has none
  (account_key_pem() gives it back to be sealed) and registered on first use; a key the CA knows
  already finds its account.
- A certificate's key is a new ECDSA P-256 key per order (smaller, faster handshakes than RSA).
- Errors come back as AcmeError with the CA's words: rate limits (with the CA's Retry-After when
  it says one), CAA refusals, failed challenges, and a CA that does not answer."""

from __future__ import annotations

import asyncio
import contextlib
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import requests
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID
from josepy.jwk import JWKRSA
from requests.adapters import HTTPAdapter

from acme import challenges, crypto_util, messages
from acme import client as acme_client
from acme import errors as acme_errors
from svc.adapters.acme.port import AcmeError, AcmeErrorKind, ChallengeSolver, Issued, Method

ORDER_SECONDS = 120.0  # how long an order may take to be validated and issued
USER_AGENT = "svc (self-hosted hosting control plane)"


def new_account_key_pem() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


def _new_cert_key_pem() -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def describe(fullchain_pem: str) -> tuple[datetime, datetime, str, tuple[str, ...]]:
    """(notBefore, notAfter, issuer's name, the names it covers) of a chain's leaf."""
    leaf = x509.load_pem_x509_certificates(fullchain_pem.encode())[0]
    issuer = leaf.issuer.get_attributes_for_oid(NameOID.COMMON_NAME)
    try:
        sans = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names = tuple(sans.get_values_for_type(x509.DNSName))
    except x509.ExtensionNotFound:
        names = ()
    return (leaf.not_valid_before_utc, leaf.not_valid_after_utc,
            str(issuer[0].value) if issuer else leaf.issuer.rfc4514_string(), names)


def _retry_after(detail: str) -> datetime | None:
    """When a rate limit lifts, as Let's Encrypt says it in the error's detail ("...: retry after
    2026-11-27 10:00:00 UTC: see https://letsencrypt.org/docs/rate-limits/")."""
    found = re.search(r"retry after (\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})", detail, re.I)
    if found is None:
        return None
    return datetime.fromisoformat(f"{found[1]}T{found[2]}").replace(tzinfo=UTC)


def _acme_error(exc: BaseException) -> AcmeError:
    if isinstance(exc, messages.Error):
        typ = exc.typ or ""
        said = str(exc.detail or exc.title or typ)
        if typ.endswith(":rateLimited"):
            return AcmeError(AcmeErrorKind.rate_limited, f"the CA's rate limit: {said}", retry_after=_retry_after(said))
        if typ.endswith(":caa"):
            return AcmeError(AcmeErrorKind.caa, f"a CAA record forbids this CA: {said}")
        return AcmeError(AcmeErrorKind.rejected, said)
    if isinstance(exc, acme_errors.ValidationError):
        failures: list[str] = []
        for authzr in exc.failed_authzrs:
            for chall in authzr.body.challenges:
                if chall.error is not None:
                    failures.append(f"{authzr.body.identifier.value}: {chall.error.detail or chall.error.typ}")
        words = "; ".join(failures) or "a challenge failed"
        kind = AcmeErrorKind.caa if "caa" in words.lower() else AcmeErrorKind.rejected
        return AcmeError(kind, f"the CA could not validate {words}")
    if isinstance(exc, acme_errors.TimeoutError):
        return AcmeError(AcmeErrorKind.unavailable, "the order was not validated in time")
    if isinstance(exc, (requests.RequestException, OSError)):
        return AcmeError(AcmeErrorKind.unavailable, f"the CA did not answer: {type(exc).__name__}")
    return AcmeError(AcmeErrorKind.rejected, f"the order failed: {exc}")


class _TrustedCA(HTTPAdapter):
    """requests' adapter verifying against one CA bundle, whatever the library and the environment
    (REQUESTS_CA_BUNDLE) asked for."""

    def __init__(self, ca_bundle: str) -> None:
        super().__init__()
        self.ca_bundle = ca_bundle

    def send(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("verify") is not False:
            kwargs["verify"] = self.ca_bundle
        return super().send(request, *args, **kwargs)


class AcmeClient:
    """Acme (port.py) on a directory URL."""

    def __init__(self, directory_url: str, *, account_key_pem: str | None, email: str | None,
                 ca_bundle: str | None = None) -> None:
        self.directory_url = directory_url
        self.description = f"ACME at {directory_url}"
        self.email = email
        self.ca_bundle = ca_bundle
        self._key_pem = account_key_pem or new_account_key_pem()
        self._key = JWKRSA(key=serialization.load_pem_private_key(self._key_pem.encode(), password=None))
        self._client: acme_client.ClientV2 | None = None
        self._lock = asyncio.Lock()

    def account_key_pem(self) -> str:
        return self._key_pem

    def _connect(self) -> acme_client.ClientV2:
        """The directory read and the account registered (or found), once per process."""
        if self._client is not None:
            return self._client
        net = acme_client.ClientNetwork(self._key, user_agent=USER_AGENT, timeout=30)
        if self.ca_bundle is not None:  # a private CA (pebble's listener): trust its certificate
            net.session.mount("https://", _TrustedCA(self.ca_bundle))
        directory = acme_client.ClientV2.get_directory(self.directory_url, net)
        client = acme_client.ClientV2(directory, net=net)
        registration = messages.NewRegistration.from_data(email=self.email, terms_of_service_agreed=True)
        try:
            net.account = client.new_account(registration)
        except acme_errors.ConflictError as exc:  # the key has an account already: use it
            net.account = messages.RegistrationResource(uri=exc.location, body=messages.Registration())
        self._client = client
        return client

    async def issue(self, names: list[str], method: Method, solver: ChallengeSolver) -> Issued:
        async with self._lock:  # one order at a time per account here (the library is not thread-safe)
            try:
                client = await asyncio.to_thread(self._connect)
                key_pem = _new_cert_key_pem()
                csr = crypto_util.make_csr(key_pem, names)
                order = await asyncio.to_thread(client.new_order, csr)
                published: list[tuple[str, str, str]] = []
                try:
                    for authz in order.authorizations:
                        if not self._to_prove(authz):
                            continue  # proven already (RFC 8555 7.1.4: a CA may hand back a valid one)
                        name, token, value, chall = self._challenge(authz, method)
                        await solver.publish(method, name, token, value)
                        published.append((name, token, value))
                        await asyncio.to_thread(client.answer_challenge, chall, chall.chall.response(self._key))
                    deadline = datetime.now() + timedelta(seconds=ORDER_SECONDS)
                    done = await asyncio.to_thread(client.poll_and_finalize, order, deadline)
                finally:
                    for name, token, value in published:
                        with contextlib.suppress(Exception):
                            await solver.withdraw(method, name, token, value)
            except AcmeError:
                raise
            except Exception as exc:
                raise _acme_error(exc) from None
        not_before, not_after, issuer, covered = describe(done.fullchain_pem)
        return Issued(fullchain_pem=done.fullchain_pem, key_pem=key_pem.decode(), not_before=not_before,
                      not_after=not_after, issuer=issuer, names=covered)

    @staticmethod
    def _to_prove(authz: Any) -> bool:
        """Whether an order's authorization waits for a challenge's answer: a pending one does; a
        valid one (reused from an earlier order, as Let's Encrypt does for 30 days) is proven and
        its challenges cannot be answered again; any other is a refusal, said in words."""
        status = authz.body.status
        if status == messages.STATUS_PENDING:
            return True
        if status == messages.STATUS_VALID:
            return False
        raise AcmeError(AcmeErrorKind.rejected,
                        f"the CA's authorization for {authz.body.identifier.value} is {status}, not pending")

    def _challenge(self, authz: Any, method: Method) -> tuple[str, str, str, Any]:
        domain = authz.body.identifier.value
        wanted = challenges.DNS01 if method is Method.dns01 else challenges.HTTP01
        for chall in authz.body.challenges:
            if isinstance(chall.chall, wanted):
                value = chall.chall.validation(self._key)
                token = chall.chall.encode("token")
                name = chall.chall.validation_domain_name(domain) if method is Method.dns01 else domain
                return name, token, value, chall
        raise AcmeError(AcmeErrorKind.rejected, f"the CA offers no {method.value} challenge for {domain}")

    async def caa_identities(self) -> tuple[str, ...]:
        try:
            client = await asyncio.to_thread(self._connect)
        except Exception as exc:
            raise _acme_error(exc) from None
        meta = client.directory.meta
        return tuple(str(i).lower() for i in (meta.caa_identities or ()))

    async def renewal_time(self, fullchain_pem: str) -> datetime | None:
        """A time in ARI's suggested window (the library picks one at random in it), when the CA's
        directory has renewalInfo; None otherwise. (The library itself says None without
        renewalInfo: the directory object is no mapping, `in` on it raised, so ARI was never read.)"""
        try:
            client = await asyncio.to_thread(self._connect)
            leaf = x509.load_pem_x509_certificates(fullchain_pem.encode())[0].public_bytes(serialization.Encoding.PEM)
            when, _ = await asyncio.to_thread(client.renewal_time, leaf)
        except Exception as exc:
            raise _acme_error(exc) from None
        if when is None:
            return None
        return when if when.tzinfo else when.replace(tzinfo=UTC)
