"""The fake social providers as a component: with SVC_AUTH_FAKE, the serving process runs the
identity fake (svc.adapters.idp.fake: GitHub's, Google's and Microsoft's shapes), taking any client
id and secret, so a project's sign-in works offline with whatever the newcomer typed."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

from svc.adapters.idp.fake import FakeIdp, running_fake_idp
from svc.adapters.social_fake.settings import SocialFakeSettings
from svc.settings import Config
from svc.supervisor.component import Component, Launch, Line


@contextlib.asynccontextmanager
async def _start(ctx: Any, launch: Launch) -> AsyncIterator[None]:
    settings = ctx.config.settings_of(SocialFakeSettings)
    if not settings.auth_fake:
        yield
        return
    async with running_fake_idp(FakeIdp(any_client=True), port=settings.auth_fake_port):
        yield


def _banner(config: Config, launch: Launch) -> Sequence[Line]:
    url = config.settings_of(SocialFakeSettings).base_url()
    return [Line("sign-in fake", f"{url} (GitHub, Google, Microsoft for projects' auth)")] if url else []


COMPONENT = Component(name="social_fake", settings=SocialFakeSettings, start=_start, banner=_banner)
