"""Two orgs buying the same name at the same moment: one gets it, the other is told it is taken, and
the registrar charged once (the hostile tenant's race of issue 42's probe, on both stores)."""

from __future__ import annotations

import asyncio

from svc.adapters.registrar import FakeRegistrar
from tests.domains.conftest import CONTACT
from tests.domains.test_purchase import charges
from tests.support.api import Svc, assert_error
from tests.support.team import make_team


async def test_two_orgs_racing_for_one_name_pay_once(dsvc: Svc, registrar: FakeRegistrar) -> None:
    t = await make_team(dsvc, other_org=True)
    for round_ in range(3):
        name = f"race-{round_}.com"
        got = await asyncio.gather(
            t.alice.client.post("/v1/orgs/acme/domains", json={"name": name, "contact": CONTACT}),
            t.eve.client.post("/v1/orgs/other/domains", json={"name": name, "contact": CONTACT}))
        codes = sorted(r.status_code for r in got)
        assert codes == [201, 409], [r.text for r in got]
        assert_error(next(r for r in got if r.status_code == 409), 409, "domain_taken")
        assert charges(registrar, name) == (1200, 0)
        owners = [d for d in registrar.domains() if d["name"] == name]
        assert len(owners) == 1
