"""Email's failures: one type each."""

from __future__ import annotations

from svc.errors import Conflict, Forbidden, NotFound, RateLimited, ServiceUnavailable


class EmailUnavailable(Conflict):
    code = "email_unavailable"
    default_message = "This svc has no mail domain (its operator sets SVC_MAIL_DOMAIN): email cannot be granted"


class EmailNotConfigured(ServiceUnavailable):
    """GET status on a svc without a mail domain: there is no address to show."""

    code = "email_not_configured"
    default_message = "This svc has no mail domain (its operator sets SVC_MAIL_DOMAIN)"


class EmailNotGranted(Forbidden):
    """A send from a project without email (never granted, or revoked)."""

    code = "email_not_granted"
    default_message = "This project is not granted email: grant it (POST .../email) to send"


class AddressTaken(Conflict):
    code = "email_address_taken"
    default_message = "Another project already receives mail at this address"


class MailNotFound(NotFound):
    code = "not_found"
    default_message = "No such message in this project's mail log"


class RawMissing(NotFound):
    code = "not_found"
    default_message = "This message has no raw copy (hasRaw is false)"


class HourlyCap(RateLimited):
    """The plan's hourly cap of sent mail: the same send may pass later (Retry-After)."""

    default_message = "The project sent its plan's mail for this hour"
