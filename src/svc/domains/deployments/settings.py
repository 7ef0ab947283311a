"""The deployments area's own rules: what a bundle may be (decisions.md)."""

from __future__ import annotations

from svc.settings import AreaSettings


class DeploymentSettings(AreaSettings):
    # Bundles (decisions.md): the compressed size, in bytes.
    max_bundle_bytes: int = 100 * 1024 * 1024
    # Bundles: the unpacked size, in bytes.
    max_unpacked_bytes: int = 500 * 1024 * 1024
    # Bundles: how many files one may hold.
    max_bundle_entries: int = 20_000
