"""Email's failures: one type each."""

from __future__ import annotations

from svc.errors import AppError, BadRequest, Conflict, Forbidden, NotFound, RateLimited, ServiceUnavailable


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


# The provider's notifications (/v1/hooks/ses, sns.py).

class MailTopicUnset(AppError):
    status = 501
    code = "mail_topic_unset"
    default_message = "This svc takes no mail provider notifications (its operator sets SVC_MAIL_TOPIC)"


class MalformedNotification(BadRequest):
    default_message = "The body is not an SNS message"


class WrongTopic(Forbidden):
    code = "wrong_topic"
    default_message = "The notification's TopicArn is not this svc's SVC_MAIL_TOPIC"


class BadCertificateUrl(Forbidden):
    """Never fetched: svc fetches certificates from SNS's regional host only."""

    code = "bad_certificate_url"
    default_message = ("SigningCertURL is not https://sns.<region>.amazonaws.com/SimpleNotificationService-<hex>.pem")


class BadSignature(Forbidden):
    code = "bad_signature"
    default_message = "The notification's signature does not verify"


class BadSubscribeUrl(Forbidden):
    """Never fetched: a subscription is confirmed on SNS's regional host only, for svc's topic."""

    code = "bad_subscribe_url"
    default_message = "SubscribeURL is not a ConfirmSubscription of this topic on SNS's regional host"


class ProviderUnreachable(AppError):
    """The certificate or the confirmation could not be fetched: SNS retries on a 5xx."""

    status = 502
    code = "mail_provider_unavailable"
    default_message = "SNS did not answer"
