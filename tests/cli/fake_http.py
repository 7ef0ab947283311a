"""A small HTTP server whose answers a test chooses: something that is not an svc API (a web page, a
proxy's error), or an API stand-in that records what the client sent (headers, body size)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType

Answer = tuple[int, dict[str, str], bytes]

HTML_404: Answer = (404, {"content-type": "text/html; charset=utf-8"},
                    b"<!doctype html><title>Not Found</title><h1>Not Found</h1>")


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body_bytes: int


@dataclass
class FakeHttp:
    """`with FakeHttp({("GET", "/v1/config"): (200, {...}, b"...")}) as fake:` serves on `fake.url`;
    requests not in `routes` get `default`. `fake.seen` lists the requests, in order."""

    routes: dict[tuple[str, str], Answer] = field(default_factory=dict)
    default: Answer = HTML_404
    seen: list[Seen] = field(default_factory=list)
    url: str = ""

    def __enter__(self) -> FakeHttp:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                body = self._read_body()
                path = self.path.split("?", 1)[0]
                fake.seen.append(Seen(self.command, path, {k.lower(): v for k, v in self.headers.items()}, body))
                status, headers, content = fake.routes.get((self.command, path), fake.default)
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("content-length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            def _read_body(self) -> int:
                if "chunked" in self.headers.get("transfer-encoding", "").lower():
                    total = 0
                    while size := int(self.rfile.readline().strip() or b"0", 16):
                        total += len(self.rfile.read(size))
                        self.rfile.readline()
                    self.rfile.readline()
                    return total
                length = int(self.headers.get("content-length") or 0)
                return len(self.rfile.read(length)) if length else 0

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
