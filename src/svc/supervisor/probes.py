"""Readiness probes a spec builds its `ready` from: one HTTP GET on a fresh connection."""

from __future__ import annotations

import asyncio
import contextlib
import ssl as _ssl
from collections.abc import Mapping

_MAX_BODY = 1024 * 1024


async def http_get(host: str, port: int, path: str, *, headers: Mapping[str, str] | None = None,
                   seconds: float = 2.0, ssl: _ssl.SSLContext | None = None) -> tuple[int, bytes] | None:
    """GET `path` on a new connection (HTTP/1.0, closed after the answer, so it tells which process
    answers now, not one a kept-alive connection was made to): (status, body), or None when nothing
    answers within `seconds`. `headers` may name the Host; https with `ssl`."""
    sent = {"Host": host if ":" not in host else f"[{host}]", "Connection": "close"} | dict(headers or {})
    request = f"GET {path} HTTP/1.0\r\n" + "".join(f"{k}: {v}\r\n" for k, v in sent.items()) + "\r\n"
    try:
        async with asyncio.timeout(seconds):
            reader, writer = await asyncio.open_connection(host, port, ssl=ssl)
            try:
                writer.write(request.encode())
                await writer.drain()
                data = b""
                while len(data) < _MAX_BODY and (chunk := await reader.read(65536)):
                    data += chunk
            finally:
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()
    except (OSError, TimeoutError):
        return None
    head, _, body = data.partition(b"\r\n\r\n")
    status = head.split(b"\r\n", 1)[0].split(b" ")
    if len(status) < 2 or not status[0].startswith(b"HTTP/") or not status[1].isdigit():
        return None
    return int(status[1]), body
