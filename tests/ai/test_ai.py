"""AI: the model catalog, a project's grant, the org's credit and its ledger (docs/ai.md)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from pydantic import ValidationError
from sqlalchemy import func, select

from svc.domains.ai.settings import AISettings
from svc.models import AICredit, AILedgerEntry, AuditEvent
from tests.support.api import Svc, assert_error
from tests.support.team import make_team


async def test_the_catalog_lists_every_model_with_integer_prices(svc: Svc) -> None:
    assert (await svc.anon.get("/v1/ai/models")).status_code == 401
    team = await make_team(svc)
    models = (await team.vic.client.get("/v1/ai/models")).json()["models"]
    by_lane = {m["lane"] for m in models}
    assert by_lane == {"frontier", "value"}
    for model in models:
        assert isinstance(model["inputMicroCentsPerMTok"], int) and isinstance(model["outputMicroCentsPerMTok"], int)
        if model["lane"] == "frontier":
            assert model["listPrice"] is True and model["id"].startswith(model["provider"] + "/")
        else:
            assert "provider" not in model
    mini = next(m for m in models if m["id"] == "openai/gpt-4o-mini")
    assert mini["inputMicroCentsPerMTok"] == 15_000_000  # $0.15 per million tokens


@pytest.mark.parametrize(("entry", "said"), [
    ('id = "x/m"\nlane = "frontier"\nlist_price = true\ninput_micro_cents_per_mtok = 1\n'
     'output_micro_cents_per_mtok = 1\ncontext_tokens = 10\nmax_output_tokens = 5', "names its provider"),
    ('id = "m"\nlane = "value"\nlist_price = false\ninput_micro_cents_per_mtok = 1.5\n'
     'output_micro_cents_per_mtok = 1\ncontext_tokens = 10\nmax_output_tokens = 5', "model 1 (m): input_micro_cents"),
    ('id = "m"\nlane = "value"\nprovider = "acme"\nlist_price = false\ninput_micro_cents_per_mtok = 1\n'
     'output_micro_cents_per_mtok = 1\ncontext_tokens = 10\nmax_output_tokens = 5', "no provider field"),
])
def test_a_catalog_with_a_mistake_stops_the_start(tmp_path: Path, entry: str, said: str) -> None:
    bad = tmp_path / "catalog.toml"
    bad.write_text(f"[[models]]\n{entry}\n")
    with pytest.raises(ValidationError) as refused:
        AISettings(ai_catalog=bad)
    assert said in str(refused.value) and str(bad) in str(refused.value)
    bad.write_text("[[models]\n")
    with pytest.raises(ValidationError, match="not valid TOML"):
        AISettings(ai_catalog=bad)


async def test_grant_status_and_revoke(svc: Svc) -> None:
    team = await make_team(svc, project="site")
    url = "/v1/orgs/acme/projects/site/ai"
    before = (await team.vic.client.get(url)).json()
    # The caps show without a grant (the free plan's), and nothing was spent.
    assert before == {"granted": False, "maxOutputTokens": 4096, "maxInputTokens": 0, "maxCallsPerMinute": 20,
                      "maxMicroCentsPerDay": 100_000_000, "balanceMicroCents": 0, "spentMicroCents24h": 0}
    assert_error(await team.vic.client.post(url), 403)
    overview = "/v1/orgs/acme/projects/site/overview"
    assert (await team.vic.client.get(overview)).json()["resources"]["ai"] == {"declared": False, "provisioned": False}
    for _ in range(2):  # idempotent
        r = await team.bob.client.post(url)
        assert r.status_code == 200 and r.json()["granted"] is True
    # The project's overview says so (ProjectOverview: whether declared resources are provisioned).
    assert (await team.vic.client.get(overview)).json()["resources"]["ai"]["provisioned"] is True
    assert_error(await team.bob.client.delete(url), 403)
    for _ in range(2):
        assert (await team.alice.client.delete(url)).status_code == 204
    assert (await team.vic.client.get(url)).json()["granted"] is False
    assert (await team.vic.client.get(overview)).json()["resources"]["ai"]["provisioned"] is False
    assert_error(await team.alice.client.get("/v1/orgs/acme/projects/nope/ai"), 404)
    async with svc.ctx.db.transaction(write=False) as s:
        actions = list((await s.scalars(select(AuditEvent.action).where(AuditEvent.action.like("ai.%")))).all())
    assert sorted(actions) == ["ai.grant", "ai.revoke"]


async def test_credit_and_the_ledger_sum_to_the_micro_cent(svc: Svc) -> None:
    from svc.domains.ai import service
    from svc.uow import Tx, unit_of_work

    team = await make_team(svc)
    credit = (await team.bob.client.get("/v1/orgs/acme/ai/credit")).json()
    assert credit == {"balanceMicroCents": 0, "hasPaymentMethod": False, "autoTopupsToday": 0,
                      "autoTopupPerDay": 3, "autoTopup": {"enabled": False, "thresholdMicroCents": None,
                                                          "amountMicroCents": None}}
    assert_error(await team.vic.client.get("/v1/orgs/acme/ai/credit"), 403)
    org = await _org_id(svc)
    amounts = [500_000_000, -125_000_001, 7, -3, 2_000_000_000]

    async def adjust(amount: int) -> None:
        async with unit_of_work(svc.ctx, Tx.WRITE) as uow:
            await service.adjust(uow, await _org(uow, org), amount, "test")

    await asyncio.gather(*(adjust(a) for a in amounts))
    assert (await team.bob.client.get("/v1/orgs/acme/ai/credit")).json()["balanceMicroCents"] == sum(amounts)
    async with svc.ctx.db.transaction(write=False) as s:
        ledger = await s.scalar(select(func.sum(AILedgerEntry.micro_cents)).where(AILedgerEntry.org_id == org))
        balance = await s.scalar(select(AICredit.balance_micro_cents).where(AICredit.org_id == org))
    assert ledger == balance == sum(amounts)

    page = (await team.bob.client.get("/v1/orgs/acme/ai/ledger?limit=2")).json()
    assert len(page["entries"]) == 2 and page["entries"][0]["kind"] == "adjust"
    assert set(page["entries"][0]) == {"ledger_id", "kind", "microCents", "createdAt"}
    seen = [e["ledger_id"] for e in page["entries"]]
    while page["nextBefore"] is not None:
        page = (await team.bob.client.get(f"/v1/orgs/acme/ai/ledger?limit=2&before={page['nextBefore']}")).json()
        seen += [e["ledger_id"] for e in page["entries"]]
    assert len(seen) == len(amounts) and seen == sorted(seen, reverse=True)
    for bad in ("limit=0", "limit=201", "before=x", "before=0"):
        assert_error(await team.bob.client.get(f"/v1/orgs/acme/ai/ledger?{bad}"), 400)


async def _org_id(svc: Svc, slug: str = "acme") -> str:
    from svc.models import Org

    async with svc.ctx.db.transaction(write=False) as s:
        return str(await s.scalar(select(Org.id).where(Org.slug == slug)))


async def _org(uow: object, org_id: str) -> object:
    from svc.models import Org

    return await uow.session.get(Org, org_id)  # type: ignore[attr-defined]


async def test_an_operator_adjusts_the_credit_from_the_server(svc: Svc) -> None:
    from tests.cli.conftest import clean_env, run_in_process

    team = await make_team(svc)
    env = clean_env() | {"SVC_DATA_DIR": str(svc.ctx.settings.data_dir)}
    if svc.ctx.settings.database_url:
        env["SVC_DATABASE_URL"] = svc.ctx.settings.database_url

    async def admin(*args: str) -> tuple[int, dict[str, object]]:
        ran = await asyncio.to_thread(run_in_process, ["admin", "credit", "--json", *args], env)
        return ran.code, json.loads(ran.out)

    code, said = await admin("acme", "+$5", "--reason", "goodwill")
    assert code == 0 and said["microCents"] == 500_000_000 and said["balanceMicroCents"] == 500_000_000
    code, said = await admin("--reason", "refund", "acme", "--", "-$1.25")
    assert code == 0 and said["balanceMicroCents"] == 375_000_000
    for args, refused in ((("acme", "5 dollars", "--reason", "x"), "bad_request"),
                          (("acme", "+$0.000000001", "--reason", "x"), "bad_request"),
                          (("acme", "+$1", "--reason", " "), "bad_request"),
                          (("nobody", "+$1", "--reason", "x"), "not_found")):
        code, said = await admin(*args)
        assert code == 1 and said["code"] == refused
    ledger = (await team.bob.client.get("/v1/orgs/acme/ai/ledger")).json()["entries"]
    assert [e["microCents"] for e in ledger] == [-125_000_000, 500_000_000]
    assert (await team.bob.client.get("/v1/orgs/acme/ai/credit")).json()["balanceMicroCents"] == 375_000_000
