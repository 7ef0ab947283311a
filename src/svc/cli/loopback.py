"""The loopback half of the browser sign-in.

The API's identity-provider callback sends the browser to our redirect with the result in the URL
fragment (`#token=...&expiresAt=...` or `#error=<code>&message=<text>`). A fragment never reaches a
server, so the page served at the redirect carries a small script that reads `location.hash`, removes
it from the address bar, and POSTs it (form-encoded) back to the same path. The path holds a random
nonce, so no other page or local process can hand us a session of its choosing; the server listens on
127.0.0.1 only, on a port the system picks.
"""

from __future__ import annotations

import base64
import hashlib
import json
import queue
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

MAX_BODY = 16 * 1024

_SCRIPT = """(function () {
  var m = document.getElementById("m");
  var data = window.location.hash.replace(/^#/, "");
  history.replaceState(null, "", window.location.pathname);
  if (!data) { m.textContent = "This page holds no sign-in result. Start again with: svc login"; return; }
  fetch(window.location.pathname, {method: "POST", body: data,
                                   headers: {"Content-Type": "application/x-www-form-urlencoded"}})
    .then(function (r) { return r.json(); })
    .then(function (j) { m.textContent = j.message; })
    .catch(function () { m.textContent = "Could not reach the svc command; is it still running?"; });
})();"""

_PAGE = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">
<title>svc sign-in</title></head>
<body style="font-family: system-ui, sans-serif; margin: 3rem;">
<h1>svc</h1><p id="m">Finishing sign-in&hellip;</p>
<script>{_SCRIPT}</script>
</body></html>
""".encode()

_CSP = ("default-src 'none'; connect-src 'self'; style-src 'unsafe-inline'; "
        f"script-src 'sha256-{base64.b64encode(hashlib.sha256(_SCRIPT.encode()).digest()).decode()}'")


@dataclass(frozen=True)
class Outcome:
    """What the browser handed back: a verified session, or the provider's/API's error."""

    fields: dict[str, str]
    error_code: str | None = None
    error_message: str | None = None


# Given the fragment's fields (with a token), return (accepted, message for the browser page).
Verifier = Callable[[dict[str, str]], tuple[bool, str]]


class LoopbackLogin:
    def __init__(self, verify: Verifier) -> None:
        self._verify = verify
        self._nonce = secrets.token_urlsafe(24)
        self._results: queue.Queue[Outcome] = queue.Queue()
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = False  # server_close() waits for a handler still answering
        self._thread = threading.Thread(target=self._server.serve_forever, name="svc-login-loopback", daemon=True)

    @property
    def path(self) -> str:
        return f"/callback/{self._nonce}"

    @property
    def url(self) -> str:
        port = self._server.server_address[1]
        return f"http://127.0.0.1:{port}{self.path}"

    def __enter__(self) -> LoopbackLogin:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def wait(self, timeout: float) -> Outcome | None:
        """The first accepted session or error, or None when `timeout` seconds pass."""
        try:
            return self._results.get(timeout=timeout)
        except queue.Empty:
            return None

    def judge(self, fields: dict[str, str]) -> tuple[int, bool, str, Outcome | None]:
        """Judge one POSTed fragment: (HTTP status, accepted, message for the page, the outcome if final).
        The handler hands the outcome over (hand_over) only after the page has its answer, so the
        command never exits while the browser is still waiting for one."""
        with self._lock:
            if self._done.is_set():
                return 409, False, "This sign-in is already finished; you can close this tab.", None
            if "error" in fields:
                code = fields["error"][:100] or "login_failed"
                message = fields.get("message", "")[:500] or "Sign-in failed"
                self._done.set()
                outcome = Outcome(fields={}, error_code=code, error_message=message)
                return 200, False, f"Sign-in failed: {message}. Return to your terminal.", outcome
            if not fields.get("token"):
                return 400, False, "This page holds no sign-in result. Start again with: svc login", None
            accepted, message = self._verify(fields)
            if not accepted:
                return 400, False, message, None
            self._done.set()
            return 200, True, message, Outcome(fields=fields)

    def hand_over(self, outcome: Outcome) -> None:
        """Give the final outcome to wait()."""
        self._results.put(outcome)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        login = self

        class Handler(BaseHTTPRequestHandler):
            server_version = "svc-cli"
            sys_version = ""
            timeout = 10  # a connection that sends nothing cannot hold the command open

            def log_message(self, format: str, *args: object) -> None:
                """Quiet: the terminal shows a spinner, and nothing here belongs in a log."""

            def _path_ok(self) -> bool:
                return urlsplit(self.path).path == login.path

            def _send(self, status: int, body: bytes, content_type: str, extra: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.send_header("Referrer-Policy", "no-referrer")
                self.send_header("X-Content-Type-Options", "nosniff")
                for k, v in (extra or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def _json(self, status: int, ok: bool, message: str) -> None:
                self._send(status, json.dumps({"ok": ok, "message": message}).encode(), "application/json")

            def do_GET(self) -> None:
                if not self._path_ok():
                    self._send(404, b"Not found\n", "text/plain; charset=utf-8")
                    return
                self._send(200, _PAGE, "text/html; charset=utf-8", {"Content-Security-Policy": _CSP})

            def do_POST(self) -> None:
                if not self._path_ok():
                    self._json(404, False, "Not found")
                    return
                origin = self.headers.get("Origin")
                host = self.headers.get("Host", "")
                if origin is not None and origin != f"http://{host}":
                    self._json(403, False, "Cross-origin request refused")
                    return
                try:
                    length = int(self.headers.get("Content-Length", "0"))
                except ValueError:
                    length = -1
                if length < 0 or length > MAX_BODY:
                    self._json(400, False, "Bad request")
                    return
                raw = self.rfile.read(length).decode("utf-8", errors="replace")
                fields = {k: v[0] for k, v in parse_qs(raw, keep_blank_values=True).items() if v}
                status, ok, message, outcome = login.judge(fields)
                try:
                    self._json(status, ok, message)
                    self.wfile.flush()
                finally:
                    if outcome is not None:
                        login.hand_over(outcome)

        return Handler
