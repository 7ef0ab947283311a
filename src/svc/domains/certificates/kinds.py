"""The kinds of job of the certificates area, declared in its manifest (`job_kinds`); their values are
stored in the jobs' rows and never change."""

from __future__ import annotations

from enum import StrEnum


class CertificateJob(StrEnum):
    # Certificates (domains/certificates/jobs.py): the cycle that asks for the certificates svc
    # should hold and renews the due ones; one order ({"name"}).
    cycle = "certificate.cycle"
    issue = "certificate.issue"
    ocsp = "certificate.ocsp"  # an OCSP answer to staple, asked of the issuer's responder
