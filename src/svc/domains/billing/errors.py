from __future__ import annotations

from svc.errors import AppError, BadRequest, Conflict, Forbidden, NotFound


class BillingOff(AppError):
    status = 501
    code = "billing_off"
    default_message = "Billing is not configured on this svc: plans are set by its operator (svc admin plan)"


class BillingUnavailable(AppError):
    status = 502
    code = "billing_unavailable"
    default_message = "The billing provider did not answer: try again in a minute"


class AlreadyPro(Conflict):
    code = "already_pro"
    default_message = "This org is on the pro plan already: manage it in the billing portal"


class SubscriptionLive(AlreadyPro):
    """The provider has a live subscription for the org that svc has not heard of yet (its webhook
    late or lost): a second checkout would charge the customer twice. The spec's code for an org
    already pro (already_pro), in words of its own."""

    default_message = ("This org already has a live pro subscription at the billing provider; svc has not "
                       "heard of it yet and is checking with the provider now: a second checkout would charge "
                       "twice")


class NotPro(Conflict):
    code = "not_pro"
    default_message = "This org is not on the pro plan: there is no subscription to cancel or resume"


class NoBillingHistory(NotFound):
    default_message = "This org has never paid: there is no billing portal or customer for it yet"


class BadSignature(Forbidden):
    code = "bad_signature"
    default_message = "The webhook's signature does not verify"


class ReturnToNotAllowed(BadRequest):
    """returnTo outside SVC_PUBLIC_URL: a rule of this server's settings, not of the field's shape
    (the OpenAPI document cannot state it), hence a code of its own."""

    code = "return_to_not_allowed"
