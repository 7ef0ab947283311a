"""Certificates over ACME: the CA svc orders from (docs/tls.md)."""

from __future__ import annotations

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
