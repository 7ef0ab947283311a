"""One class per failure of the domains area (spec "Domains": 402, 409, 422, 502, 503)."""

from __future__ import annotations

from svc.errors import AppError, BadRequest, Conflict, NotFound, ServiceUnavailable


class InvalidDomain(BadRequest):
    """A field of a domains request breaking a rule only this area knows: InvalidDomain.of_field."""


class DomainNotFound(NotFound):
    default_message = "No such domain in this org"


class DomainTaken(Conflict):
    code = "domain_taken"
    default_message = "Another org on this svc holds this domain (or its zone)"


class DomainUnavailable(Conflict):
    code = "domain_unavailable"
    default_message = ("The registrar says this name cannot be registered: somebody holds it, or the registry "
                       "reserves it")


class PaymentFailed(AppError):
    status = 402
    code = "payment_failed"
    default_message = "The registrar could not take the payment: nothing was registered"


class RegistrarRejected(AppError):
    status = 422
    code = "registrar_rejected"
    default_message = ("The registrar refused the request for good: a retry of the same request cannot help; correct "
                       "it and send a new one (any payment was refunded)")


class SagaIncomplete(AppError):
    status = 502
    code = "saga_incomplete"
    default_message = "The purchase stopped midway: send the same request again to continue where it stopped"


class RegistrarFailed(AppError):
    status = 502
    code = "registrar_error"
    default_message = "The registrar failed or did not answer: try again in a minute"


class RegistrarNotConfigured(ServiceUnavailable):
    code = "registrar_not_configured"
    default_message = "No registrar is configured on this svc: domains can be imported, not bought"


class ImportedDomain(BadRequest):
    """Renew, lock, auto-renew and the auth code are the registrar's: an imported domain's is elsewhere."""

    code = "domain_imported"
    default_message = ("This domain was imported: its registration is managed at its own registrar, not through "
                       "svc")


class TransferredOut(BadRequest):
    code = "domain_transferred_out"
    default_message = ("The registrar's account no longer holds this domain: it was transferred to another "
                       "registrar (svc marked it transferred_out)")


class RenewalInProgress(Conflict):
    """Another renewal of the domain is unfinished (a length or an Idempotency-Key of its own): it is
    finished first, by sending it again, so that no renewal is charged without being recorded."""

    code = "request_in_progress"
    default_message = "Another renewal of this domain is unfinished: send that request again to finish it first"


class IdempotencyKeyReused(Conflict):
    code = "idempotency_key_reused"
    default_message = "This Idempotency-Key was used for another renewal (another number of years)"
