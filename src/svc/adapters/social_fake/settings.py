"""Whether `svc serve` runs the fake social providers for projects' sign-in (`make run` does)."""

from __future__ import annotations

from svc.settings import ComponentSettings


class SocialFakeSettings(ComponentSettings):
    # Projects' end users sign in with a fake GitHub, Google and Microsoft that svc serve runs
    # itself (any client id and secret are taken; `make run` sets it): nothing to register.
    auth_fake: bool = False
    # Its port on 127.0.0.1 (the browser is sent there, so it must be reachable from it).
    auth_fake_port: int = 9911

    def base_url(self) -> str | None:
        return f"http://127.0.0.1:{self.auth_fake_port}" if self.auth_fake else None
