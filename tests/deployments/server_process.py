"""svc's app under uvicorn in a process of its own (what `svc serve` runs, without the edge), for
tests that kill it.

    python -m tests.deployments.server_process PORT_FILE

Settings come from the environment (SVC_*). Listens on 127.0.0.1 on a free port, which it writes
to PORT_FILE once it serves."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import uvicorn

from svc.app import create_app, default_adapters
from svc.settings import Settings


async def serve(port_file: Path) -> None:
    settings = Settings()
    app = create_app(settings, default_adapters(settings))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            await task
            return
        await asyncio.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    tmp = port_file.with_suffix(".tmp")
    tmp.write_text(str(port))
    tmp.replace(port_file)
    await task


if __name__ == "__main__":
    asyncio.run(serve(Path(sys.argv[1])))
