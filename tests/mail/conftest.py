from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from svc.settings import Settings
from tests.support.api import Svc
from tests.support.smtp import SmtpSink, running_smtp_svc


@pytest.fixture
def sink() -> Iterator[SmtpSink]:
    with SmtpSink() as running:
        yield running


@pytest.fixture
async def mail_svc(settings: Settings, sink: SmtpSink) -> AsyncIterator[Svc]:
    """svc sending its mail over SMTP to `sink`, with the send cycle running."""
    async with running_smtp_svc(settings, sink) as svc:
        yield svc


@pytest.fixture
async def held_svc(settings: Settings, sink: SmtpSink) -> AsyncIterator[Svc]:
    """svc sending to `sink` whose background cycles do not run: a test sends with send_due()."""
    async with running_smtp_svc(settings, sink, run_workers=False) as svc:
        yield svc
