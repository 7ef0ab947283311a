"""The certificates area's server command: `svc admin certs list` (also `svc certs list`)."""

from __future__ import annotations

from typing import Annotated

import typer

from svc.admin import Operator, as_json, group, said
from svc.domains.certificates import service
from svc.uow import Tx

HELP = "The TLS certificates svc holds, on the server against its store (docs/tls.md)."


def commands(app: typer.Typer, operator: Operator) -> None:
    certs = group(app, "certs", HELP)

    @certs.callback()
    def _certs() -> None:
        """The TLS certificates svc holds, on the server against its store (docs/tls.md)."""

    @certs.command("list")
    def listed(json_: Annotated[bool, typer.Option("--json", help="Print them as JSON.")] = False) -> None:
        """The TLS certificates svc holds (the app domain's wildcard, each active custom hostname's):
        their status, expiry, when each is renewed, and why the last order failed."""
        rows = operator.run(service.list_all, Tx.READ)
        if json_:
            as_json({"certificates": [r.model_dump(mode="json", by_alias=True) for r in rows]})
            return
        if not rows:
            said("No certificates: svc orders them when SVC_ACME_DIRECTORY_URL is set (docs/tls.md).")
            return
        from rich.console import Console
        from rich.table import Table

        table = Table("NAME", "KIND", "STATUS", "EXPIRES", "RENEWS", "LAST ERROR", box=None)
        for r in rows:
            table.add_row(r.name, r.kind, r.status, f"{r.not_after:%Y-%m-%d %H:%M}" if r.not_after else "-",
                          f"{r.renew_at:%Y-%m-%d %H:%M}" if r.renew_at else "-", r.last_error or "")
        Console(soft_wrap=True).print(table)
