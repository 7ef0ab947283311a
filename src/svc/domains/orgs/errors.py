from __future__ import annotations

from svc.errors import BadRequest, Conflict, NotFound


class OrgSlugTaken(Conflict):
    code = "org_slug_taken"
    default_message = "That org slug is taken"


class ConfirmMismatch(BadRequest):
    default_message = "confirm must equal the org slug"


class OrgNotEmpty(Conflict):
    code = "org_not_empty"
    default_message = "The org still holds projects, domains, repositories or DNS zones"


class PersonalOrgUndeletable(Conflict):
    code = "personal_org"
    default_message = "A personal org cannot be deleted"


class PersonalOrgIsSolo(Conflict):
    """Spec: a personal org is a one-person org. Work with others in an org created for it."""

    code = "personal_org"
    default_message = "A personal org has one member, its owner: create an org to work with others"


class ActiveSubscription(Conflict):
    code = "active_subscription"
    default_message = "The org has a live paid subscription; cancel it first"


class UserNotFound(NotFound):
    code = "user_not_found"
    default_message = "No user with that provider and subject has logged in yet"


class MemberNotFound(NotFound):
    default_message = "No such member"


class AlreadyMember(Conflict):
    code = "already_member"
    default_message = "Already a member of this org; change roles with PUT"


class LastAdmin(Conflict):
    code = "last_admin"
    default_message = "The org's last admin cannot be demoted, removed or leave"
