"""The AI area's server commands: `svc admin credit ORG AMOUNT` and `svc admin ai overruns|resume`."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from svc.admin import Operator, as_json, group, operator_name, refuse, said
from svc.domains.ai import service
from svc.domains.orgs import service as orgs
from svc.errors import AppError
from svc.kit import money
from svc.uow import Tx, UnitOfWork

HELP = "AI models whose provider billed more than svc held for a call (docs/ai.md)."


def _overrun_json(row: Any) -> dict[str, Any]:
    return {"model": row.model, "stopped": row.stopped_since is not None,
            "stoppedSince": row.stopped_since.isoformat() if row.stopped_since else None,
            "overruns": row.overruns, "lossMicroCents": row.loss_micro_cents, "lastAt": row.last_at.isoformat(),
            "lastHeldMicroCents": row.last_held_micro_cents, "lastBilledMicroCents": row.last_billed_micro_cents,
            "lastOrgId": row.last_org_id, "lastProjectId": row.last_project_id,
            "resumedAt": row.resumed_at.isoformat() if row.resumed_at else None, "resumedBy": row.resumed_by}


def commands(app: typer.Typer, operator: Operator) -> None:
    @app.command("credit")
    def credit(
        org: Annotated[str, typer.Argument(help="The org's slug.", show_default=False)],
        amount: Annotated[str, typer.Argument(metavar="AMOUNT", show_default=False,
                                              help="+$5, -$1.25 (dollars) or micro-cents (+500000000). A "
                                                   "negative amount goes after --: svc admin credit --reason R ORG "
                                                   "-- -$1.25")],
        reason: Annotated[str, typer.Option("--reason", help="Why, kept on the ledger row.", show_default=False)],
        by: Annotated[str | None, typer.Option("--by", help="Who adjusts, for the audit trail (operator:NAME); "
                                                            "default: the account running this.",
                                               show_default=False)] = None,
        order: Annotated[str | None, typer.Option("--order", help="A paid order of credit the org was refused (the "
                                                                  "operator's billing page lists them): this credit "
                                                                  "settles it, once.", show_default=False)] = None,
        json_: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    ) -> None:
        """Adjust an org's AI credit: one `adjust` row on its ledger, and the balance it moves, in one
        transaction (audited as ai.adjust, with the operator as its actor)."""
        try:
            micro_cents = money.parse(amount)
        except ValueError as exc:
            refuse(json_, "bad_request", str(exc))
        if not reason.strip():
            refuse(json_, "bad_request", "--reason says why, for the ledger")
        who = operator_name(by)

        async def work(uow: UnitOfWork) -> tuple[int, int] | None:
            found = await orgs.org_by_slug(uow, org)
            return None if found is None else await service.adjust(uow, found, micro_cents, reason.strip(), who,
                                                                   order.strip() if order else None)

        try:
            result = operator.run(work)
        except AppError as exc:
            refuse(json_, exc.code, exc.message)
        if result is None:
            refuse(json_, "not_found", f"No org {org!r}")
        ledger_id, balance = result
        if json_:
            as_json({"org": org, "ledgerId": ledger_id, "microCents": micro_cents, "balanceMicroCents": balance,
                     "order": order})
            return
        said(f"{org}: {money.dollars(micro_cents)} ({reason.strip()}); the balance is now {money.dollars(balance)}.")

    ai = group(app, "ai", HELP)

    @ai.callback()
    def _ai() -> None:
        """AI models whose provider billed more than svc held for a call (docs/ai.md)."""

    @ai.command("overruns")
    def overruns(json_: Annotated[bool, typer.Option("--json", help="Print them as JSON.")] = False) -> None:
        """Models whose provider billed a call more than svc held for it: svc's loss (the org paid the
        hold), and whether the gateway refuses the model until you resume it."""
        rows = operator.run(service.overruns, Tx.READ)
        if json_:
            as_json({"overruns": [_overrun_json(r) for r in rows]})
            return
        if not rows:
            said("No model was billed more than svc held.")
            return
        for r in rows:
            state = f"stopped since {r.stopped_since:%Y-%m-%d %H:%M:%S}" if r.stopped_since else "lent to"
            said(f"{r.model}: {state}; {r.overruns} overruns, svc's loss {money.dollars(r.loss_micro_cents)} "
                 f"(last: held {money.dollars(r.last_held_micro_cents)}, billed "
                 f"{money.dollars(r.last_billed_micro_cents)})")

    @ai.command("resume")
    def resume(
        model: Annotated[str, typer.Argument(help="The model's id in the catalog.", show_default=False)],
        by: Annotated[str | None, typer.Option("--by", help="Who resumes it, for the audit trail.",
                                               show_default=False)] = None,
        json_: Annotated[bool, typer.Option("--json", help="Print the model's record as JSON.")] = False,
    ) -> None:
        """Lend to a model the gateway stopped after an overrun again, once its estimate is corrected
        (the catalog's context and prices, the provider's billing); its losses stay on record."""
        who = operator_name(by)
        row = operator.run(lambda uow: service.resume_model(uow, model, who))
        if row is None:
            refuse(json_, "not_found", f"No overrun of {model!r} is on record")
        if json_:
            as_json(_overrun_json(row))
            return
        said(f"{model}: lent to again.")
