"""The Storage tab's routes as a browser meets them (the session cookie, the CSRF token), where the
journey (tests/web/test_storage.py) cannot look: the upload is refused before its body is read
when it cannot fit the project's room; a form posted without script stays under the JSON cap; a
plain form's upload and delete work without htmx; the download route keeps to the project's own
keys; a viewer and another org's member change nothing."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import httpx

from tests.storage.conftest import FREE_QUOTA
from tests.support.api import Svc
from tests.support.team import make_team

TAB = "/orgs/acme/projects/site/storage"
API = "/v1/orgs/acme/projects/site/storage"
BOUNDARY = "svcstoragetest"


async def _csrf(client: httpx.AsyncClient) -> str:
    page = await client.get(TAB, headers={"accept": "text/html"})
    assert page.status_code == 200, page.text
    found = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert found, "the page has no form token"
    return found.group(1)


def _form(csrf: str, name: str, size: int, *, key: str = "") -> tuple[bytes, bytes, bytes]:
    """A multipart upload: (what comes before the file's bytes, the part's end, ...), the file's
    bytes sent between them by the caller."""
    head = (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n{csrf}\r\n"
            f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"prefix\"\r\n\r\n\r\n"
            f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\n{key}\r\n"
            f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n"
            "Content-Type: application/octet-stream\r\n\r\n").encode()
    tail = f"\r\n--{BOUNDARY}--\r\n".encode()
    return head, b"x" * size, tail


class Counted:
    """A request body sent in chunks, counting what the server took."""

    def __init__(self, *parts: bytes) -> None:
        self.parts = parts
        self.sent = 0
        self.length = sum(len(p) for p in parts)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for part in self.parts:
            for i in range(0, len(part), 16 * 1024):
                chunk = part[i:i + 16 * 1024]
                self.sent += len(chunk)
                yield chunk


def _headers(length: int, **more: str) -> dict[str, str]:
    # As a script asks (JSON): a refusal comes as the Error envelope, its code to read.
    return {"content-type": f"multipart/form-data; boundary={BOUNDARY}", "content-length": str(length),
            "accept": "application/json", **more}


async def test_an_upload_that_cannot_fit_is_refused_before_its_body_is_read(storage_svc: Svc) -> None:
    team = await make_team(storage_svc, project="site")
    assert (await team.bob.client.post(API)).status_code == 200
    browser = storage_svc.browser(team.bob.token)
    csrf = await _csrf(browser)

    body = Counted(*_form(csrf, "big.bin", 4 * FREE_QUOTA))
    r = await browser.post(TAB + "/upload", content=body, headers=_headers(body.length, **{"x-csrf-token": csrf}))
    assert r.status_code == 413 and r.json()["code"] == "storage_quota_exceeded", r.text
    assert f"storage quota of {FREE_QUOTA // 1024}.0 KiB" in r.json()["message"]
    assert body.sent < body.length // 2  # refused from its headers, not after taking it all
    assert (await team.bob.client.get(API + "/objects")).json()["objects"] == []

    # One that fits goes in whole, through htmx (the token as a header): the tab's next page.
    body = Counted(*_form(csrf, "fits.bin", FREE_QUOTA // 2))
    r = await browser.post(TAB + "/upload", content=body, headers=_headers(body.length, **{
        "x-csrf-token": csrf, "hx-request": "true"}))
    assert r.status_code == 200 and r.headers["hx-redirect"] == TAB, r.text
    listed = (await team.bob.client.get(API + "/objects")).json()["objects"]
    assert [(o["key"], o["size"]) for o in listed] == [("fits.bin", FREE_QUOTA // 2)]
    # A second one would pass the quota with the first: objects.put's hold refuses it.
    body = Counted(*_form(csrf, "more.bin", FREE_QUOTA // 2 + 1))
    r = await browser.post(TAB + "/upload", content=body, headers=_headers(body.length, **{"x-csrf-token": csrf}))
    assert r.status_code == 413 and r.json()["code"] == "storage_quota_exceeded", r.text
    assert [o["key"] for o in (await team.bob.client.get(API + "/objects")).json()["objects"]] == ["fits.bin"]


async def test_a_form_without_script_works_under_the_cap_and_is_refused_past_it(storage_svc: Svc) -> None:
    team = await make_team(storage_svc, project="site")
    assert (await team.bob.client.post(API)).status_code == 200
    browser = storage_svc.browser(team.bob.token)
    csrf = await _csrf(browser)
    head, data, tail = _form(csrf, "a.txt", 10, key="docs/a.txt")
    r = await browser.post(TAB + "/upload", content=head + data + tail, headers=_headers(len(head + data + tail)))
    assert r.status_code == 303 and r.headers["location"] == TAB, r.text  # the folder it was sent from
    assert (await team.bob.client.get(API + "/objects/docs/a.txt")).content == data
    # Past the JSON cap, the CSRF field is in the body: refused before it is read.
    head, data, tail = _form(csrf, "b.txt", 2 * 1024 * 1024)
    r = await browser.post(TAB + "/upload", content=head + data + tail, headers=_headers(len(head + data + tail)))
    assert r.status_code == 400 and "over 1048576 bytes" in r.text
    # Delete by a plain form: back to the object's folder.
    r = await browser.post(TAB + "/delete", data={"csrf": csrf, "key": "docs/a.txt"})
    assert r.status_code == 303 and r.headers["location"] == TAB + "?prefix=docs%2F"
    assert (await team.bob.client.get(API + "/objects")).json()["objects"] == []


async def test_the_tab_keeps_to_the_projects_own_objects_and_roles(storage_svc: Svc) -> None:
    team = await make_team(storage_svc, project="site", other_org=True)
    assert (await team.bob.client.post(API)).status_code == 200
    assert (await team.bob.client.put(API + "/objects/secret.txt", content=b"secret")).status_code == 200
    html = {"accept": "text/html"}

    viewer = storage_svc.browser(team.vic.token)
    got = await viewer.get(TAB + "/download", params={"key": "secret.txt"})
    assert got.status_code == 200 and got.content == b"secret"
    assert got.headers["content-disposition"] == "attachment; filename*=UTF-8''secret.txt"
    for crafted in ("../secret.txt", "/secret.txt", "a/./b", ""):
        assert (await viewer.get(TAB + "/download", params={"key": crafted})).status_code == 400
    csrf = await _csrf(viewer)
    for path, form in ((TAB + "/delete", {"key": "secret.txt"}), (TAB, {}), (TAB + "/revoke", {})):
        assert (await viewer.post(path, data={"csrf": csrf, **form}, headers=html)).status_code == 403
    head, data, tail = _form(csrf, "v.txt", 3)
    r = await viewer.post(TAB + "/upload", content=head + data + tail,
                          headers=_headers(len(head + data + tail), **{"x-csrf-token": csrf}))
    assert r.status_code == 403
    # Another org's member finds no such project (404), its objects unnamed.
    eve = storage_svc.browser(team.eve.token)
    assert (await eve.get(TAB + "/download", params={"key": "secret.txt"}, headers=html)).status_code == 404
    assert (await eve.get(TAB, params={"prefix": ""}, headers=html)).status_code == 404
    assert (await team.bob.client.get(API + "/objects/secret.txt")).content == b"secret"


async def test_without_an_object_store_the_tab_says_why(storage_svc: Svc) -> None:
    team = await make_team(storage_svc, project="site")
    adapters = storage_svc.ctx.adapters
    store, adapters.objects = adapters.objects, None
    adapters.off["objects"] = "the object store did not start"
    try:
        page = await storage_svc.browser(team.bob.token).get(TAB, headers={"accept": "text/html"})
    finally:
        adapters.objects = store
        del adapters.off["objects"]
    assert page.status_code == 200, page.text
    assert "This svc cannot grant storage now: the object store did not start." in page.text
    assert "Grant storage</button>" not in page.text and "storage-objects" not in page.text
