from __future__ import annotations

from svc.errors import Conflict, NotFound


class InviteNotFound(NotFound):
    default_message = "No such invite"


class TooManyInvites(Conflict):
    code = "too_many_invites"
    default_message = "This org has too many pending invites; revoke some or wait until they expire"


class InviteUsed(Conflict):
    code = "invite_used"
    default_message = "This invite has already been accepted"


class InviteRevoked(Conflict):
    code = "invite_revoked"
    default_message = "This invite was revoked"


class InviteExpired(Conflict):
    code = "invite_expired"
    default_message = "This invite has expired; ask an admin of the org to send a new one"
