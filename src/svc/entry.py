"""The `svc` console script: the client's commands (svc.cli, HTTP only) and the server's
(svc.operator: serve, admin, certs), each loaded only when it runs."""

from __future__ import annotations

from svc.cli import main as client
from svc.operator import commands as server


def main() -> None:
    server.register(client.app)
    client.run(server_commands=server.NAMES)


if __name__ == "__main__":
    main()
