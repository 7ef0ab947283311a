"""tests/support/ports.py: a port picked for one server is not picked again for the next while the
first has not bound it yet (one svc serve once got the same port for its API and its edge)."""

from __future__ import annotations

from tests.support.ports import free_port


def test_ports_picked_one_after_another_are_distinct_though_none_is_bound_yet() -> None:
    picks = [free_port() for _ in range(300)] + [free_port(udp_too=True) for _ in range(100)]
    assert len(set(picks)) == len(picks)
