"""A wrong API address is reported as what it is: nothing answers there (`connection_failed`), or what
answers is not an svc API (`not_svc_api`), with a hint to check SVC_API_URL / --api-url or to start the
server; never as "not signed in" (no session is ever stored for a wrong address)."""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.cli.conftest import Cli, Result
from tests.cli.fake_http import HTML_404, FakeHttp
from tests.support.ports import free_port


def _one_error(r: Result) -> str:
    """The stderr of a failed command: one `error:` line, then a `hint:` line; returns the hint."""
    lines = r.err.strip().splitlines()
    assert len(lines) == 2, r.err
    assert lines[0].startswith("error: ") and lines[1].startswith("hint: "), r.err
    return lines[1]


def test_nothing_listening_at_svc_api_url_is_not_reported_as_not_signed_in(tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    cli = Cli(dead, tmp_path / "me")  # no session stored for this address, as for any mistyped one
    for args in (("whoami",), ("whoami", "--json"), ("projects", "list"), ("orgs", "list", "--json")):
        r = cli.fails("connection_failed", *args, exit_code=2)
        assert f"error: Cannot reach the svc API at {dead}: connection refused" in r.err
        hint = _one_error(r)
        assert f"SVC_API_URL is set to {dead}" in hint and "`svc serve`" in hint and "`make run`" in hint
        assert "not signed in" not in r.err.lower()

    # The hint names where the address came from.
    r = cli.fails("connection_failed", "--api-url", dead, "whoami", exit_code=2, env=cli.env(SVC_API_URL=""))
    assert f"--api-url ({dead})" in _one_error(r)


def test_a_host_name_that_does_not_resolve(tmp_path: Path) -> None:
    url = "http://no-such-svc-host.invalid:8080"  # .invalid never resolves (RFC 2606)
    r = Cli(url, tmp_path / "me").fails("connection_failed", "whoami", "--json", exit_code=2)
    assert f"Cannot reach the svc API at {url}: the host name no-such-svc-host.invalid does not resolve" in r.err
    assert "SVC_API_URL" in _one_error(r)


@pytest.mark.parametrize("token", [None, "svc_ses_anything"])
def test_a_web_page_at_the_address_does_not_look_like_an_svc_api(tmp_path: Path, token: str | None) -> None:
    """Signed out, svc asks /v1/config before saying "not signed in"; with a token, /v1/me answers."""
    with FakeHttp() as web:
        cli = Cli(web.url, tmp_path / "me")
        env = cli.env(**({"SVC_TOKEN": token} if token else {}))
        for args in (("whoami",), ("whoami", "--json")):
            r = cli.fails("not_svc_api", *args, exit_code=2, env=env)
            assert f"error: The server at {web.url} does not look like an svc API" in r.err
            assert "HTTP 404 Not Found with an HTML page" in r.err
            assert f"SVC_API_URL is set to {web.url}" in _one_error(r)
        assert {s.path for s in web.seen} == {"/v1/me" if token else "/v1/config"}


def test_other_answers_that_are_not_an_svc_api(tmp_path: Path) -> None:
    not_found_json = (404, {"content-type": "application/json"}, json.dumps({"detail": "Not Found"}).encode())
    with FakeHttp(default=not_found_json) as other:
        cli = Cli(other.url, tmp_path / "a")
        r = cli.fails("not_svc_api", "orgs", "list", exit_code=2, env=cli.env(SVC_TOKEN="t"))
        assert "HTTP 404 Not Found with a body of type application/json, not the API's Error body" in r.err
    page = (200, {"content-type": "text/html"}, b"<html>welcome</html>")
    with FakeHttp(default=page) as site:
        cli = Cli(site.url, tmp_path / "b")
        r = cli.fails("not_svc_api", "whoami", exit_code=2)
        assert "HTTP 200 with an HTML page" in r.err
    moved = (301, {"location": "https://svc.example.com/v1/config"}, b"")
    with FakeHttp(default=moved) as redirecting:
        cli = Cli(redirecting.url, tmp_path / "c")
        r = cli.fails("not_svc_api", "whoami", exit_code=2)
        assert "a redirect (HTTP 301) to https://svc.example.com/v1/config" in r.err
        assert "use it as --api-url / SVC_API_URL" in _one_error(r)


def test_a_proxy_error_in_front_of_the_api_is_not_called_a_wrong_address(tmp_path: Path) -> None:
    bad_gateway = (502, {"content-type": "text/html"}, b"<html>502 Bad Gateway</html>")
    with FakeHttp(default=bad_gateway) as proxy:
        cli = Cli(proxy.url, tmp_path / "me")
        r = cli.fails("http_502", "whoami", env=cli.env(SVC_TOKEN="t"))
        assert "error: The server answered HTTP 502 Bad Gateway (http_502)" in r.err
        assert "proxy" in _one_error(r)


def test_signed_out_at_a_real_svc_api_is_still_not_signed_in(tmp_path: Path) -> None:
    config = (200, {"content-type": "application/json"}, b'{"identityProvider": null}')
    with FakeHttp(routes={("GET", "/v1/config"): config}, default=HTML_404) as api:
        r = Cli(api.url, tmp_path / "me").fails("not_signed_in", "whoami", "--json")
        assert f"Not signed in to {api.url}" in r.err and "svc login" in _one_error(r)


def test_timeouts_are_named_as_such() -> None:
    """(A real timeout takes 10 to 30 seconds; the wording is checked on the client's own function.)"""
    from svc.cli import transport
    from svc.cli.client import FROM_OPTION, unreachable

    connect = unreachable(transport.ConnectTimeout("timed out"), "http://10.255.255.1:8080", FROM_OPTION)
    assert connect.code == "connection_failed" and connect.exit_code == 2
    assert connect.message == ("Cannot reach the svc API at http://10.255.255.1:8080: "
                               "no connection within 10 s (timeout)")
    assert connect.hint is not None and "--api-url (http://10.255.255.1:8080)" in connect.hint
    read = unreachable(transport.ReadTimeout("timed out"), "http://10.255.255.1:8080", FROM_OPTION)
    assert read.message.endswith("it accepted the connection but sent no answer within 30 s (timeout)")


def test_a_read_timeout_is_one(tmp_path: Path) -> None:
    """A server that accepts and never answers: ReadTimeout (here with a short bound), not a refusal."""
    from svc.cli import transport

    with socket.create_server(("127.0.0.1", 0)) as server:
        client = transport.Client(f"http://127.0.0.1:{server.getsockname()[1]}", read_seconds=0.2)
        with pytest.raises(transport.ReadTimeout):
            client.request("GET", "/v1/me")
        client.close()


class _DropEveryOther(ThreadingHTTPServer):
    """Reads each request; closes the connection without an answer on the odd ones (a kept-alive
    connection the server closed as the request went out), answers the even ones."""

    def __init__(self) -> None:
        self.seen: list[str | None] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                server.seen.append(self.headers.get("idempotency-key"))
                if len(server.seen) % 2 == 1:
                    self.close_connection = True
                    return
                body = json.dumps({"renewed": True}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        super().__init__(("127.0.0.1", 0), Handler)


def test_a_keyed_post_goes_again_with_its_key_when_its_connection_drops() -> None:
    """A POST with an Idempotency-Key (a renewal) is done once by the server however often it is
    sent: the CLI resends it, same key, when the connection drops as it goes out; a POST without
    one is never resent."""
    from svc.cli.client import Api, CliError

    with _DropEveryOther() as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            api = Api(f"http://127.0.0.1:{server.server_address[1]}", "token")
            assert api.post("/v1/orgs/acme/domains/x.com/renew", {"years": 1}, idempotency_key="k-1") == \
                {"renewed": True}
            assert server.seen == ["k-1", "k-1"]
            server.seen.clear()
            with pytest.raises(CliError):
                api.post("/v1/orgs/acme/projects", {"name": "once"})
            assert server.seen == [None]
            api.close()
        finally:
            server.shutdown()


def test_a_proxy_from_the_environment_is_used_as_httpx_would(monkeypatch: pytest.MonkeyPatch) -> None:
    """HTTP_PROXY carries the request (the full URL as its target); NO_PROXY names who goes direct."""
    from svc.cli import transport

    config = (200, {"content-type": "application/json"}, b'{"identityProvider": null}')
    with FakeHttp(default=config) as proxy:
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy",
                     "all_proxy", "no_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        client = transport.Client("http://svc.invalid")
        assert client.request("GET", "/v1/config", params={"a": 1}).json() == {"identityProvider": None}
        assert [s.path for s in proxy.seen] == ["http://svc.invalid/v1/config"]
        client.close()
        monkeypatch.setenv("NO_PROXY", "svc.invalid")
        direct = transport.Client("http://svc.invalid")
        with pytest.raises(transport.ConnectFailed):  # .invalid never resolves: it went direct
            direct.request("GET", "/v1/config")
        assert len(proxy.seen) == 1


def test_a_kept_alive_connection_the_server_closed_is_not_sent_on() -> None:
    """The server closes an idle kept-alive connection (its keep-alive timeout) without saying so in
    its answer: the next request, a POST that is never resent, goes on a new connection."""
    from svc.cli.client import Api
    from tests.support.wait import until_sync

    closed: list[int] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # kept alive: no Connection: close in the answer

        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            body = b'{"ok": true}'
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            self.close_connection = True  # then closed, as an idle connection past its timeout is

    class Server(ThreadingHTTPServer):
        def shutdown_request(self, request: socket.socket) -> None:  # type: ignore[override]
            super().shutdown_request(request)
            closed.append(1)

    with Server(("127.0.0.1", 0), Handler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            api = Api(f"http://127.0.0.1:{server.server_address[1]}", "token")
            assert api.post("/v1/things", {"n": 1}) == {"ok": True}
            until_sync(lambda: closed, what="the server closing the connection")
            assert api.post("/v1/things", {"n": 2}) == {"ok": True}
            api.close()
        finally:
            server.shutdown()


def _self_signed(tmp_path: Path) -> tuple[Path, Path]:
    """A certificate for localhost that no store trusts, and its key (PEM files)."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def test_https_is_verified_against_the_trusted_certificates(tmp_path: Path) -> None:
    """An https API whose certificate no trusted store vouches for is refused (a TLS error, exit 2);
    trusted through SSL_CERT_FILE, the same server is spoken to."""
    cert, key = _self_signed(tmp_path)
    config = (200, {"content-type": "application/json"}, b'{"identityProvider": null}')
    with FakeHttp(routes={("GET", "/v1/config"): config}) as api:
        server_side = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        server_side.load_cert_chain(cert, key)
        port = int(api.url.rsplit(":", 1)[1])
        with socket.create_server(("127.0.0.1", 0)) as tls:
            # A TLS front on its own port, relaying each connection to the plain fake.
            def relay() -> None:
                while True:
                    try:
                        raw, _ = tls.accept()
                    except OSError:
                        return
                    threading.Thread(target=_relay, args=(server_side, raw, port), daemon=True).start()

            threading.Thread(target=relay, daemon=True).start()
            url = f"https://localhost:{tls.getsockname()[1]}"
            cli = Cli(url, tmp_path / "me")
            r = cli.fails("connection_failed", "whoami", exit_code=2)
            assert f"Cannot reach the svc API at {url}: the TLS handshake failed" in r.err
            assert api.seen == []
            cli.fails("not_signed_in", "whoami", env=cli.env(SSL_CERT_FILE=str(cert)))
            assert [s.path for s in api.seen] == ["/v1/config"]


def _relay(context: ssl.SSLContext, raw: socket.socket, port: int) -> None:
    try:
        conn = context.wrap_socket(raw, server_side=True)
    except (ssl.SSLError, OSError):
        raw.close()
        return
    with conn, socket.create_connection(("127.0.0.1", port)) as plain:
        def back() -> None:
            with contextlib.suppress(OSError):
                while data := plain.recv(65536):
                    conn.sendall(data)
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_WR)

        t = threading.Thread(target=back, daemon=True)
        t.start()
        with contextlib.suppress(OSError):
            while data := conn.recv(65536):
                plain.sendall(data)
        t.join()
