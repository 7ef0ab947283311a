"""TLS certificates svc obtains over ACME, the ACME account, and HTTP-01 challenge answers."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import String, Text
from sqlalchemy.orm import Mapped, mapped_column

from svc.models.base import Base


class AcmeAccount(Base):
    """The account at one ACME directory: its key, sealed (made once, kept for every renewal)."""

    __tablename__ = "acme_accounts"

    directory_url: Mapped[str] = mapped_column(String(500), primary_key=True)
    sealed_key: Mapped[bytes]
    created_at: Mapped[datetime]


class Certificate(Base):
    """A certificate for one name: the wildcard of the app domain (`*.<SVC_APP_DOMAIN>`, DNS-01),
    or an active custom hostname (HTTP-01). Its key is sealed; the chain is public."""

    __tablename__ = "certificates"

    name: Mapped[str] = mapped_column(String(253), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))  # wildcard | host | console | default (local CA)
    status: Mapped[str] = mapped_column(String(16))  # issuing | active | failed
    fullchain: Mapped[str | None] = mapped_column(Text)
    sealed_key: Mapped[bytes | None]
    not_before: Mapped[datetime | None]
    not_after: Mapped[datetime | None]
    issuer: Mapped[str | None] = mapped_column(String(200))
    last_error: Mapped[str | None] = mapped_column(String(1000))
    # When to order again: the CA's renewal window (ARI), else two thirds of the lifetime; after a
    # failure, the backoff's next try (never a tight loop).
    renew_at: Mapped[datetime | None] = mapped_column(index=True)
    failures: Mapped[int] = mapped_column(default=0)
    # When the operators and the owner were last told it is not renewed with its expiry near (once
    # per threshold, 14/7/1 days and the expiry: the threshold passed at this time; cleared when a
    # new certificate is issued).
    warned_at: Mapped[datetime | None]
    # OCSP stapling (ocsp.py), for a certificate whose issuer names a responder: its last good
    # answer (DER), until when it holds, and when to ask again (None: no responder).
    ocsp_response: Mapped[bytes | None]
    ocsp_valid_until: Mapped[datetime | None]
    ocsp_refresh_at: Mapped[datetime | None] = mapped_column(index=True)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class AcmeChallenge(Base):
    """An HTTP-01 answer the edge serves at /.well-known/acme-challenge/<token> (from the store,
    so whichever replica the CA reaches answers)."""

    __tablename__ = "acme_challenges"

    token: Mapped[str] = mapped_column(String(200), primary_key=True)
    host: Mapped[str] = mapped_column(String(253))
    key_authorization: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime]
