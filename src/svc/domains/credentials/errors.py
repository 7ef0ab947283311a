from __future__ import annotations

from svc.errors import BadRequest, Conflict, NotFound


class TokenNotFound(NotFound):
    default_message = "No such access token"


class TooManyTokens(Conflict):
    code = "too_many_tokens"
    default_message = "You have too many active access tokens; revoke one first"


class BadSSHKey(BadRequest):
    default_message = "publicKey is not a usable OpenSSH public key"


class SSHKeyExists(Conflict):
    code = "ssh_key_exists"
    default_message = "This SSH key is already registered"


class TooManySSHKeys(Conflict):
    code = "too_many_ssh_keys"
    default_message = "You have too many SSH keys; delete one first"


class SSHKeyNotFound(NotFound):
    default_message = "No such SSH key"
