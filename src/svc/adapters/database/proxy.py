"""The port-forward path (spec section 5 item 7): a PostgreSQL client (psql on the user's machine,
through `svc db proxy`) reaches the project's database with the user's login session and no
password. svc speaks PostgreSQL's startup protocol on both sides: it answers the client's SSL
request with "no" (the tunnel is the API's own connection), logs in to the node as the project's
role itself (SCRAM-SHA-256 with the `scramp` library, or the older md5 and cleartext exchanges a
node may ask for), tells the client it is authenticated, and from then on passes bytes both ways
untouched. A cancel request (psql's Ctrl+C opens a connection of its own) is passed to the node
as it is: it carries the backend's secret key, no credentials.

The client's user name and password are ignored: the tunnel was authorised by the API (member or
higher), and every session through it is the project's role."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import struct
from collections.abc import Awaitable, Callable

import scramp

from svc.adapters.database.port import DatabaseEndpoint

SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
CANCEL_REQUEST = 80877102
PROTOCOL_3 = 196608
# Startup parameters passed on (the rest, user and database among them, are svc's to set).
PASSED_ON = frozenset({"application_name", "client_encoding", "DateStyle", "TimeZone", "extra_float_digits"})
MAX_STARTUP = 10_000

Receive = Callable[[], Awaitable[bytes]]  # b"" when the client has gone
Send = Callable[[bytes], Awaitable[None]]


class ProxyError(Exception):
    """The client or the node broke the protocol, or the login failed: said to the client as an
    ErrorResponse where it can still read one."""


def error_response(message: str, code: str = "08006") -> bytes:
    body = b"SFATAL\x00VFATAL\x00C" + code.encode() + b"\x00M" + message.encode() + b"\x00\x00"
    return b"E" + struct.pack("!I", len(body) + 4) + body


class _Client:
    """What the client has sent and svc has not yet read (its messages arrive in any chunks)."""

    def __init__(self, receive: Receive) -> None:
        self.receive = receive
        self.buffer = b""

    async def exactly(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = await self.receive()
            if not chunk:
                raise ProxyError("the client went away during the startup")
            self.buffer += chunk
        taken, self.buffer = self.buffer[:n], self.buffer[n:]
        return taken

    async def startup(self) -> bytes:
        """The first message (no type byte: length, then a code)."""
        length = struct.unpack("!I", await self.exactly(4))[0]
        if not 8 <= length <= MAX_STARTUP:
            raise ProxyError("not a PostgreSQL client")
        return struct.pack("!I", length) + await self.exactly(length - 4)


async def _message(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """One message from the node: its type byte and its body."""
    head = await reader.readexactly(5)
    length = struct.unpack("!I", head[1:])[0]
    return head[:1], await reader.readexactly(length - 4)


def _startup(params: dict[str, str]) -> bytes:
    body = struct.pack("!I", PROTOCOL_3) + b"".join(k.encode() + b"\x00" + v.encode() + b"\x00"
                                                  for k, v in params.items()) + b"\x00"
    return struct.pack("!I", len(body) + 4) + body


def _password_message(payload: bytes) -> bytes:
    return b"p" + struct.pack("!I", len(payload) + 4) + payload


async def _login(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, role: str, password: str) -> bytes:
    """Authenticate to the node as `role`; the AuthenticationOk message to give the client."""
    client: scramp.ScramClient | None = None
    while True:
        kind, body = await _message(reader)
        if kind == b"E":
            raise ProxyError("the database refused the login: " + _said(body))
        if kind != b"R":
            raise ProxyError(f"unexpected message {kind!r} during the login")
        code = struct.unpack("!I", body[:4])[0]
        if code == 0:
            return b"R" + struct.pack("!II", 8, 0)
        if code == 10:  # SASL: the mechanisms, NUL-separated
            mechanisms = [m.decode() for m in body[4:].split(b"\x00") if m]
            client = scramp.ScramClient([m for m in mechanisms if m == "SCRAM-SHA-256"], role, password)
            first = client.get_client_first().encode()
            writer.write(_password_message(b"SCRAM-SHA-256\x00" + struct.pack("!I", len(first)) + first))
        elif code == 11 and client is not None:
            client.set_server_first(body[4:].decode())
            writer.write(_password_message(client.get_client_final().encode()))
        elif code == 12 and client is not None:
            client.set_server_final(body[4:].decode())  # proves the node knew the verifier
        elif code == 5:  # md5
            # PostgreSQL's own md5 exchange, for a node that still asks for it.
            inner = hashlib.md5((password + role).encode(), usedforsecurity=False).hexdigest()
            outer = hashlib.md5(inner.encode() + body[4:8], usedforsecurity=False).hexdigest()
            writer.write(_password_message(b"md5" + outer.encode() + b"\x00"))
        elif code == 3:  # cleartext (over loopback to the node svc administers)
            writer.write(_password_message(password.encode() + b"\x00"))
        else:
            raise ProxyError(f"the database asked for an authentication svc does not speak ({code})")
        await writer.drain()


def _said(body: bytes) -> str:
    fields = {part[:1]: part[1:].decode(errors="replace") for part in body.split(b"\x00") if part}
    return fields.get(b"M", "no message")


async def serve(receive: Receive, send: Send, endpoint: DatabaseEndpoint, role: str, password: str) -> None:
    """One client connection through the tunnel, until either side closes."""
    client = _Client(receive)
    first = await client.startup()
    code = struct.unpack("!I", first[4:8])[0]
    while code in (SSL_REQUEST, GSSENC_REQUEST):
        await send(b"N")
        first = await client.startup()
        code = struct.unpack("!I", first[4:8])[0]
    reader, writer = await asyncio.open_connection(endpoint.host, endpoint.port)
    try:
        if code == CANCEL_REQUEST:
            writer.write(first)
            await writer.drain()
            return
        if code != PROTOCOL_3:
            await send(error_response("svc's database tunnel speaks protocol 3.0 only", "08P01"))
            return
        pairs = first[8:].split(b"\x00")
        asked = {pairs[i].decode(): pairs[i + 1].decode() for i in range(0, len(pairs) - 1, 2) if pairs[i]}
        params = {"user": role, "database": endpoint.database,
                  **{k: v for k, v in asked.items() if k in PASSED_ON}}
        writer.write(_startup(params))
        await writer.drain()
        try:
            ok = await _login(reader, writer, role, password)
        except (ProxyError, scramp.ScramException) as exc:
            await send(error_response(str(exc), "28000"))
            return
        await send(ok)
        if client.buffer:  # what the client sent after its startup, ahead of the answer
            writer.write(client.buffer)
            client.buffer = b""
        await _splice(client, send, reader, writer)
    finally:
        writer.close()
        with contextlib.suppress(OSError, ConnectionError):
            await writer.wait_closed()


async def _splice(client: _Client, send: Send, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    async def upstream() -> None:
        while chunk := await client.receive():
            writer.write(chunk)
            await writer.drain()

    async def downstream() -> None:
        while chunk := await reader.read(64 * 1024):
            await send(chunk)

    tasks = [asyncio.create_task(upstream()), asyncio.create_task(downstream())]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
