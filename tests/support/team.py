"""The people most API tests need: an org "acme" with an admin, a member and a viewer, and someone
outside it (an admin of an org "other" of their own), so every role rule can be asked."""

from __future__ import annotations

from dataclasses import dataclass

from tests.support.api import Svc, User


@dataclass
class Team:
    alice: User  # admin of acme
    bob: User  # member of acme
    vic: User  # viewer of acme
    eve: User  # not in acme; admin of "other" when asked for


async def make_team(svc: Svc, *, project: str | None = None, other_org: bool = False,
                    other_project: str | None = None) -> Team:
    """acme (with `project` when given) and its three roles; eve, with her org "other" (and
    `other_project` in it) when asked for."""
    alice = await svc.login("alice")
    assert (await alice.client.post("/v1/orgs", json={"slug": "acme"})).status_code == 201
    if project is not None:
        assert (await alice.client.post("/v1/orgs/acme/projects", json={"name": project})).status_code == 201
    users = {}
    for subject, role in (("bob", "member"), ("vic", "viewer")):
        users[subject] = await svc.login(subject)
        r = await alice.client.post("/v1/orgs/acme/members", json={"provider": "dev", "subject": subject, "role": role})
        assert r.status_code == 201, r.text
    eve = await svc.login("eve")
    if other_org or other_project is not None:
        assert (await eve.client.post("/v1/orgs", json={"slug": "other"})).status_code == 201
    if other_project is not None:
        assert (await eve.client.post("/v1/orgs/other/projects", json={"name": other_project})).status_code == 201
    return Team(alice=alice, bob=users["bob"], vic=users["vic"], eve=eve)
