"""A test's settings: the shared ones with some of the parts' own set, as an operator's SVC_*
variables would set them (each value goes to the class that defines it: svc/settings.py's Config)."""

from __future__ import annotations

from typing import Any

from svc.app import read_config
from svc.settings import Config, Settings


def configured(settings: Settings | Config, **values: Any) -> Config:
    """`settings` (the parts' own read from the environment, as `svc serve` reads them) with `values`
    set, by their SVC_* names: configured(settings, edge_port=8081, repo_retention_days=0)."""
    config = settings if isinstance(settings, Config) else read_config(settings)
    return config.updated(**values)
