from __future__ import annotations

from svc.errors import BadRequest, Conflict, NotFound


class BadSecretName(BadRequest):
    default_message = "A secret name is an uppercase letter followed by up to 63 of A-Z, 0-9 and _"


class ReservedName(BadRequest):
    code = "reserved_name"
    default_message = "DB, ASSETS and names starting with SVC_ are reserved"


class ValueTooLarge(BadRequest):
    default_message = "A secret value is at most 65,536 bytes of UTF-8"


class SecretNotFound(NotFound):
    default_message = "No such secret"


class TooManySecrets(Conflict):
    code = "too_many_secrets"
    default_message = "This project has too many secrets; delete one first"


class BadSecretValue(BadRequest):
    default_message = "The secret value is not valid UTF-8 text"
