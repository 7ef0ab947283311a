"""The CLI tests here use the fixtures of tests/cli (a real `svc serve`, one `svc` per person)."""

from tests.cli.conftest import cli, people, server

__all__ = ["cli", "people", "server"]
