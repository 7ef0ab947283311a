"""The session of the state store that use cases and queries take (`StoreSession`)."""

from __future__ import annotations

from svc.kit.store_session import StoreSession


class UnitOfWorkCommits(RuntimeError):
    """A use case called commit() or rollback(): only its unit of work (svc/uow.py) may."""


class StoreSession(StoreSession):
    """Every session of the state store. A use case flushes; the unit of work that opened the
    session decides whether it commits (svc/uow.py), so commit() and rollback() refuse here.
    Savepoints (begin_nested) stay a use case's own."""

    async def commit(self) -> None:
        raise UnitOfWorkCommits("A use case does not commit: its unit of work does, once it returns")

    async def rollback(self) -> None:
        raise UnitOfWorkCommits("A use case does not roll back: raise an error, and its unit of work rolls back")

    async def finish(self, *, commit: bool) -> None:
        """End the transaction: for the unit of work (and the store's own test helpers) only."""
        if commit:
            await StoreSession.commit(self)
        else:
            await StoreSession.rollback(self)
