"""Certificates over ACME: the CA svc orders from (docs/tls.md)."""

from __future__ import annotations

from typing import Literal

from svc.settings import ComponentSettings


class AcmeSettings(ComponentSettings):
    # The CA's directory URL (unset: no certificates, http only).
    acme_directory_url: str | None = None
    # The ACME account's contact.
    acme_email: str | None = None
    # A CA bundle to trust the directory's own certificate with (a private CA such as pebble).
    acme_ca_bundle: str | None = None
    # The domains a CAA record names to allow the CA (comma-separated), for a CA whose directory does
    # not list them (its caaIdentities): svc reads CAA before ordering and says when it forbids.
    acme_caa_identities: str = ""
    # Who signs the certificates: "acme" (the CA of SVC_ACME_DIRECTORY_URL) or "local" (a CA svc makes
    # and keeps under SVC_DATA_DIR/tls/local-ca, for trying https on one machine: `make run`; never
    # with an ACME directory); unset: acme when SVC_ACME_DIRECTORY_URL is set, else none.
    tls_issuer: Literal["acme", "local"] | None = None

    def certificate_issuer(self) -> Literal["acme", "local"] | None:
        """Who signs svc's certificates (SVC_TLS_ISSUER, else acme when a directory is set); None: nobody."""
        if self.tls_issuer is not None:
            return self.tls_issuer
        return "acme" if self.acme_directory_url else None
