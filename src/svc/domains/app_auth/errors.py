"""End-user auth's failures: one type each (spec "End-user auth of a project", errors)."""

from __future__ import annotations

from svc.errors import BadRequest, Conflict, NotFound


class DatabaseRequired(Conflict):
    code = "database_required"
    default_message = ("End-user auth keeps its users in the project's own database: create it first "
                       "(svc db create, or the Database tab), then grant auth")


class NotGranted(NotFound):
    code = "not_granted"
    default_message = "This project is not granted end-user auth: a member grants it (POST .../auth)"


class InvalidProvider(BadRequest):
    code = "invalid_provider"
    default_message = "The provider is github, google or microsoft, with a client id and a client secret"
