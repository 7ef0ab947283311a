"""The auth service's failures on the project's hosts (/__svc/auth/*): one type each."""

from __future__ import annotations

from svc.errors import AppError, BadRequest, NotFound, Unauthorized


class NotServed(AppError):
    """The project is not granted auth (never, or revoked): the edge passes the request on to the
    project's own worker (nginx: error_page 421 in /__svc/auth/)."""

    status = 421
    code = "auth_not_served"
    default_message = "This project does not serve sign-in: the request goes to the site"


class UnknownHost(NotFound):
    code = "unknown_hostname"
    default_message = "svc serves no project at this hostname"


class UnknownProvider(NotFound):
    code = "unknown_provider"
    default_message = "This site does not offer sign-in with that provider"


class StateInvalid(BadRequest):
    code = "state_invalid"
    default_message = ("This sign-in is unknown, expired, already used or was started in another browser: "
                       "sign in again")


class SigninRefused(BadRequest):
    code = "signin_failed"
    default_message = "The provider did not confirm who you are: sign in again"


class NotSignedIn(Unauthorized):
    code = "not_signed_in"
    default_message = "No one is signed in to this site"
