"""One error per failure of the access area (spec "Deployment access control")."""

from __future__ import annotations

from svc.errors import BadRequest, Forbidden, NotFound, RateLimited, Unauthorized


class PasswordRequired(BadRequest):
    default_message = "Mode password needs a password the first time it is set"


class BadNext(BadRequest):
    default_message = "next must be a path on the project's host (starting with one '/', no scheme)"


class BadHost(BadRequest):
    default_message = "Not a valid hostname"


class UnknownHostname(NotFound):
    code = "unknown_hostname"
    default_message = "svc serves no project at this hostname"


class HostNotRouted(Forbidden):
    """The edge check's refusal of a host that leads to no project: the edge asks only about hosts
    it routes, so one the API cannot resolve (a name removed meanwhile, a request that names two
    hosts) is refused, never passed."""

    code = "host_not_routed"
    default_message = "svc routes no project at this hostname: access refused"


class NotOrgMember(Forbidden):
    default_message = "You are not a member of the org that owns this project"


class LoginRequired(Unauthorized):
    """The edge check's refusal; its X-Svc-Login header says where the browser must go."""

    default_message = "This project is protected: sign in or enter its password"


class WrongPassword(Unauthorized):
    default_message = "Wrong password"


class TooManyTries(RateLimited):
    default_message = "Too many password attempts; wait a minute and try again"


class BadCode(BadRequest):
    default_message = "This sign-in link is unknown, expired or already used: open the site again"


class NotAForm(BadRequest):
    default_message = "Send the form as application/x-www-form-urlencoded"
