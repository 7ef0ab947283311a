"""What the SMTP server's RCPT check read of the grants lately, kept a second per address (one per
app: `ctx.state_of(Accepted)`): a burst of mail to one address asks the store once a second, not
once a message. This process's grant and revoke forget the address at their commit, so here a
revoke refuses the next RCPT; another svc process's revoke reaches this one's RCPT within the
second, and its DATA at once (receiving reads the grants again in its own transaction: 550)."""

from __future__ import annotations

import time

# How long an answer stands, and how many addresses are kept at most (a scan of many addresses
# empties it rather than growing it).
SECONDS = 1.0
MOST = 10_000


class Accepted:
    def __init__(self) -> None:
        self._answers: dict[str, tuple[bool, float]] = {}

    def get(self, address: str) -> bool | None:
        found = self._answers.get(address)
        if found is None or found[1] <= time.monotonic():
            return None
        return found[0]

    def keep(self, address: str, accepted: bool) -> None:
        if len(self._answers) >= MOST:
            self._answers.clear()
        self._answers[address] = (accepted, time.monotonic() + SECONDS)

    def forget(self, address: str) -> None:
        self._answers.pop(address, None)
