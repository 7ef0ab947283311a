"""The SSH server's host key: made once by the node, sealed in the store, the same on every start
and every replica (clients' known_hosts stay true)."""

from __future__ import annotations

from svc.adapters.git.port import GitNode
from svc.context import AppContext
from svc.kit.clock import utcnow
from svc.models import SshHostKey
from svc.uow import Tx, unit_of_work

_ROW = "host"
_CONTEXT = "git-ssh-host-key"


async def host_key(ctx: AppContext, node: GitNode) -> bytes:
    async with unit_of_work(ctx, Tx.WRITE) as uow:
        row = await uow.session.get(SshHostKey, _ROW)
        if row is None:
            row = SshHostKey(id=_ROW, sealed_key=ctx.keys.seal(node.new_ssh_host_key(), context=_CONTEXT),
                             created_at=utcnow())
            uow.session.add(row)
            await uow.session.flush()
        return ctx.keys.unseal(row.sealed_key, context=_CONTEXT)
