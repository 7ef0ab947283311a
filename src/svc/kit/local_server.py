"""An ASGI app served in this process on a free local port: the fakes of paid third parties (a
billing provider, an AI upstream) that the tests and `svc serve` in development talk to over real
HTTP."""

from __future__ import annotations

import asyncio
import contextlib

import uvicorn
from starlette.types import ASGIApp


class LocalServer:
    def __init__(self, app: ASGIApp, name: str) -> None:
        self.app = app
        self.name = name
        self.url = ""
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self, host: str = "127.0.0.1") -> str:
        """Serve on a free port of `host`; its base URL."""
        config = uvicorn.Config(self.app, host=host, port=0, log_level="warning", lifespan="off")
        self._server = uvicorn.Server(config)
        self._task = asyncio.create_task(self._server.serve(), name=f"svc-{self.name}")
        while not self._server.started:
            if self._task.done():
                await self._task
                raise RuntimeError(f"{self.name} did not start")
            await asyncio.sleep(0.02)
        port = self._server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://{host}:{port}"
        return self.url

    async def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
            self._server.force_exit = True
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
