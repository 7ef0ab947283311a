"""svc's app under uvicorn in a process of its own (what `svc serve` runs, without the edge), for
tests that kill it.

    python -m tests.deployments.server_process PORT_FILE

Settings come from the environment (SVC_*). Listens on 127.0.0.1 on a free port, which it writes
to PORT_FILE once it serves."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from svc.app import create_app, default_adapters
from svc.operator.serve import serve_reporting_port, server_config
from svc.settings import Settings


async def serve(port_file: Path) -> None:
    settings = Settings()
    app = create_app(settings, default_adapters(settings))
    await serve_reporting_port(server_config(app, host="127.0.0.1", port=0, log_level="warning"), port_file)


if __name__ == "__main__":
    asyncio.run(serve(Path(sys.argv[1])))
