from __future__ import annotations

from typing import Protocol


class Edge(Protocol):
    """The web server in front, converged from the state store (the desired state)."""

    description: str

    async def converge_now(self) -> None:
        """Bring the edge to the current state store now; returns once it serves that state."""
        ...
