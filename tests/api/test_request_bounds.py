"""Request bodies are bounded however they arrive: with a Content-Length over 1 MiB they are
refused before a byte is read, and a chunked body (no Content-Length) is refused as soon as it
passes 1 MiB, without being read to its end: a client cannot make svc hold a large body."""

from __future__ import annotations

from collections.abc import AsyncIterator

from tests.support.api import Svc, assert_error

CHUNK = b"x" * 65536
LIMIT = 1024 * 1024


class Body:
    """A chunked request body of `chunks` chunks; counts how many were taken."""

    def __init__(self, chunks: int) -> None:
        self.chunks = chunks
        self.taken = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for _ in range(self.chunks):
            self.taken += 1
            yield CHUNK


async def test_a_chunked_body_is_refused_once_it_passes_the_cap(svc: Svc) -> None:
    owner = await svc.login("owner")
    json_body = {"content-type": "application/json"}
    form = {"content-type": "application/x-www-form-urlencoded", "accept": "application/json",
            "x-svc-host": f"site-{owner.personal_org}.localhost"}
    created = await owner.client.post(f"/v1/orgs/{owner.personal_org}/projects", json={"name": "site"})
    assert created.status_code == 201
    cases = [
        (svc.anon, "/v1/auth/dev/login", json_body),  # JSON, no credentials needed
        (owner.client, "/v1/orgs", json_body),  # JSON, signed in
        (svc.anon, "/v1/edge/password", form),  # the password form of a project host
    ]
    for client, path, headers in cases:
        body = Body(chunks=4800)  # 300 MiB if it were read to the end
        r = await client.post(path, content=body, headers=headers)
        err = assert_error(r, 400, "bad_request")
        assert "over 1048576 bytes" in err["message"], err
        assert body.taken * len(CHUNK) <= LIMIT + 2 * len(CHUNK), f"{path}: read {body.taken} chunks"
    r = await svc.anon.post("/v1/auth/dev/login", content=b"{" + b" " * LIMIT + b"}",
                            headers={"content-type": "application/json"})
    assert "over 1048576 bytes" in assert_error(r, 400, "bad_request")["message"]
    # Small chunked bodies are fine.
    async def small() -> AsyncIterator[bytes]:
        yield b'{"subject": '
        yield b'"chunky"}'
    r = await svc.anon.post("/v1/auth/dev/login", content=small(), headers={"content-type": "application/json"})
    assert r.status_code == 200, r.text
