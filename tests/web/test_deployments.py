"""The Deployments page in a real browser: deploy by dropping a .tar.gz and by choosing a folder
(packed in the browser), the progress bar and the live URL, the site itself through the edge,
rollback with its confirmation, a refused upload, and what a viewer does not get."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
from pathlib import Path

import httpx
from playwright.async_api import Dialog, Page, expect

from tests.support.bundles import site as bundle
from tests.support.serve import Server
from tests.web.conftest import look, sign_in


def _page(text: str) -> bytes:
    return f"<!doctype html><html lang=en><title>{text}</title><h1>{text}</h1></html>".encode()


async def _project(http: httpx.AsyncClient, owner: str, name: str, *, org: str | None = None) -> dict[str, str]:
    """`owner` (signed in through the API as the browser will be) with project `name` in `org`
    (made by them) or their personal org; the API's auth header."""
    r = await http.post("/v1/auth/dev/login", json={"subject": owner})
    assert r.status_code == 200, r.text
    auth = {"authorization": f"Bearer {r.json()['token']}"}
    if org is not None:
        r = await http.post("/v1/orgs", json={"slug": org}, headers=auth)
        assert r.status_code == 201, r.text
    r = await http.post(f"/v1/orgs/{org or owner}/projects", json={"name": name}, headers=auth)
    assert r.status_code == 201, r.text
    return auth


async def _versions(http: httpx.AsyncClient, auth: dict[str, str], org: str, name: str) -> list[dict[str, object]]:
    r = await http.get(f"/v1/orgs/{org}/projects/{name}/deployments", headers=auth)
    assert r.status_code == 200, r.text
    deployments: list[dict[str, object]] = r.json()["deployments"]
    return deployments


async def _drop(page: Page, name: str, data: bytes) -> None:
    """What a drag from the file manager delivers: a drop event whose DataTransfer holds the file."""
    await page.locator(".dropzone").evaluate(
        """(zone, [name, b64]) => {
            const bytes = Uint8Array.from(atob(b64), c => c.charCodeAt(0));
            const transfer = new DataTransfer();
            transfer.items.add(new File([bytes], name, {type: "application/gzip"}));
            zone.dispatchEvent(new DragEvent("dragover", {dataTransfer: transfer, bubbles: true, cancelable: true}));
            zone.dispatchEvent(new DragEvent("drop", {dataTransfer: transfer, bubbles: true, cancelable: true}));
        }""", [name, base64.b64encode(data).decode()])


async def _site_says(page: Page, url: str, text: str) -> None:
    """The live URL through the edge (real nginx; Chromium resolves *.localhost) shows `text`."""
    site = await page.context.new_page()
    try:
        response = await site.goto(url)
        assert response is not None and response.status == 200
        await expect(site.get_by_role("heading", level=1)).to_have_text(text)
    finally:
        await site.close()


async def test_deploy_by_drop_and_by_folder_then_roll_back(server: Server, contexts, http, tmp_path: Path) -> None:
    owner = "deploy-dora"
    auth = await _project(http, owner, "site")
    url = f"http://site-{owner}.localhost:{server.edge_port}"
    context = await contexts()
    page = await sign_in(context, server, owner, next_path=f"/orgs/{owner}/projects/site/deployments")
    await expect(page.get_by_role("heading", name="site: deployments")).to_be_visible()
    await expect(page.get_by_role("link", name="Deployments")).to_have_attribute("aria-current", "page")
    await expect(page.get_by_text("Nothing deployed yet")).to_be_visible()

    # 1. A .tar.gz dragged onto the page: sent as it is.
    await _drop(page, "site.tar.gz", bundle({"assets/index.html": _page("Version one")}))
    result = page.locator("#upload-result")
    await expect(result).to_contain_text(f"Version 1 is live at {url}")
    await expect(page.locator("#upload-bar")).to_have_js_property("value", 100)
    await expect(page.get_by_role("status")).to_contain_text("100%")
    await expect(result.get_by_role("link", name=url)).to_have_attribute("href", url)
    # The list part is fetched again: the new version is there, live.
    await expect(page.locator("#deployments tbody tr")).to_have_count(1)
    await expect(page.locator("#deployments tbody tr").first).to_contain_text("live")
    await _site_says(page, url + "/", "Version one")

    # 2. A folder chosen with the folder picker: packed in the browser as `svc deploy` packs it
    # (no svc.json: an empty one; files under assets/; .git and dot-files left out), including a
    # path too long for a plain ustar name and one that needs ustar's prefix field.
    folder = tmp_path / "my-site"
    (folder / ".git").mkdir(parents=True)
    (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (folder / ".env").write_text("SECRET=1\n")
    (folder / "index.html").write_bytes(_page("Version two"))
    long_name = "a-page-with-a-name-much-longer-than-a-ustar-header-holds-" * 2 + ".html"
    (folder / long_name).write_bytes(_page("Long name"))
    deep = folder.joinpath(*["level"] * 20)
    deep.mkdir(parents=True)
    (deep / "page.html").write_bytes(_page("Deep page"))
    await page.locator("#bundle-folder").set_input_files(folder)
    await expect(result).to_contain_text(f"Version 2 is live at {url}")
    await expect(page.locator("#upload-bar")).to_have_js_property("value", 100)
    await expect(page.locator("#deployments tbody tr")).to_have_count(2)
    await _site_says(page, url + "/", "Version two")
    await _site_says(page, f"{url}/{long_name}", "Long name")
    await _site_says(page, f"{url}/{'level/' * 20}page.html", "Deep page")
    newest = (await _versions(http, auth, owner, "site"))[0]
    assert newest["version"] == 2 and newest["live"] is True
    assert newest["fileCount"] == 4  # svc.json and three pages: nothing of .git, no .env
    assert newest["uploader"] == owner

    # 3. Roll back to version 1, confirming.
    v1 = page.locator("#deployments tbody tr", has_text="v1")
    await expect(page.locator("#deployments tbody tr", has_text="v2").get_by_role("button")).to_have_count(0)
    asked: list[str] = []

    async def confirm(dialog: Dialog) -> None:
        asked.append(dialog.message)
        await dialog.accept()

    page.once("dialog", confirm)
    await v1.get_by_role("button", name="Roll back to v1").click()
    await expect(page.locator(".notice[role=status]")).to_have_text(f"Version 1 is live again at {url}")
    assert asked and asked[0].startswith("Roll back to version 1?")
    await expect(page.locator("#deployments tbody tr", has_text="v1")).to_contain_text("live")
    await look(page, "deployments-rolled-back")
    await _site_says(page, url + "/", "Version one")
    assert [d["live"] for d in await _versions(http, auth, owner, "site")] == [False, True]

    # 4. Forward again to the newer version: said as what it is, not "Roll back".
    v2 = page.locator("#deployments tbody tr", has_text="v2")
    await expect(v2.get_by_role("button", name=re.compile("Roll back"))).to_have_count(0)
    page.once("dialog", confirm)
    await v2.get_by_role("button", name="Roll forward to v2").click()
    await expect(page.locator(".notice[role=status]")).to_have_text(f"Version 2 is live again at {url}")
    assert asked[-1].startswith("Roll forward to version 2?")
    await expect(page.locator("#deployments tbody tr", has_text="v1").get_by_role("button")).to_have_text(
        "Roll back to v1")


async def test_a_declined_confirmation_rolls_nothing_back(server: Server, contexts, http) -> None:
    owner = "deploy-ellis"
    auth = await _project(http, owner, "site")
    for text in ("One", "Two"):
        r = await http.post(f"/v1/orgs/{owner}/projects/site/deployments", content=bundle(
            {"assets/index.html": _page(text)}), headers={**auth, "content-type": "application/gzip"})
        assert r.status_code == 201, r.text
    context = await contexts()
    page = await sign_in(context, server, owner, next_path=f"/orgs/{owner}/projects/site/deployments")
    declined = asyncio.Event()

    async def decline(dialog: Dialog) -> None:
        await dialog.dismiss()
        declined.set()

    page.once("dialog", decline)
    await page.get_by_role("button", name="Roll back to v1").click()
    await asyncio.wait_for(declined.wait(), 10)
    await page.reload()
    await expect(page.locator("#deployments tbody tr", has_text="v2")).to_contain_text("live")
    assert [d["live"] for d in await _versions(http, auth, owner, "site")] == [True, False]


async def test_a_file_that_is_not_a_bundle_is_refused_in_words(server: Server, contexts, http) -> None:
    owner = "deploy-fermi"
    auth = await _project(http, owner, "site")
    context = await contexts()
    page = await sign_in(context, server, owner, next_path=f"/orgs/{owner}/projects/site/deployments")
    await page.locator("#bundle-file").set_input_files(
        files=[{"name": "notes.tar.gz", "mimeType": "application/gzip", "buffer": b"just some text, not gzip\n"}])
    alert = page.locator("#upload-result [role=alert]")
    await expect(alert).to_contain_text("not a gzip-compressed file")
    await expect(alert).to_be_focused()
    await expect(page.get_by_role("status")).to_contain_text("refused; nothing changed")
    await expect(page.get_by_text("Nothing deployed yet")).to_be_visible()
    assert await _versions(http, auth, owner, "site") == []
    # A good bundle without the page's CSRF token (as another site would send it): refused.
    good = bundle({"assets/index.html": _page("Fixed"), "assets/noise.bin": os.urandom(1_500_000)})
    r = await page.request.post(f"{server.api}/orgs/{owner}/projects/site/deployments/upload", data=good,
                                headers={"content-type": "application/gzip"})
    assert r.status == 403
    assert await _versions(http, auth, owner, "site") == []
    # The picker works again after a refusal: a good bundle goes through, over the 1 MiB cap of
    # other requests (the deploy's own bounds apply).
    await page.locator("#bundle-file").set_input_files(
        files=[{"name": "site.tar.gz", "mimeType": "application/gzip", "buffer": good}])
    await expect(page.locator("#upload-result")).to_contain_text("Version 1 is live at")
    assert [d["sizeBytes"] for d in await _versions(http, auth, owner, "site")] == [len(good)]


async def test_a_viewer_sees_the_versions_but_no_upload_or_rollback(server: Server, contexts, http) -> None:
    owner, viewer, org = "deploy-galois", "deploy-germain", "deploy-lab"
    auth = await _project(http, owner, "site", org=org)
    for text in ("One", "Two"):
        r = await http.post(f"/v1/orgs/{org}/projects/site/deployments", content=bundle(
            {"assets/index.html": _page(text)}), headers={**auth, "content-type": "application/gzip",
                                                          "x-svc-git-commit": "0123456789abcdef0123",
                                                          "x-svc-git-branch": "main", "x-svc-git-dirty": "true",
                                                          "x-svc-git-message": "Say%20" + text})
        assert r.status_code == 201, r.text
    await http.post("/v1/auth/dev/login", json={"subject": viewer})
    r = await http.post(f"/v1/orgs/{org}/members", json={"provider": "dev", "subject": viewer, "role": "viewer"},
                        headers=auth)
    assert r.status_code == 201, r.text
    context = await contexts()
    page = await sign_in(context, server, viewer, next_path=f"/orgs/{org}/projects/site/deployments")
    rows = page.locator("#deployments tbody tr")
    await expect(rows).to_have_count(2)
    await expect(rows.first).to_contain_text("01234567")
    await expect(rows.first).to_contain_text("main")
    await expect(rows.first).to_contain_text("Say Two")
    await expect(rows.first).to_contain_text("uncommitted changes")
    await expect(rows.first).to_contain_text(f"by {owner}")
    await expect(page.locator(".dropzone")).to_have_count(0)
    await expect(page.locator("input[type=file]")).to_have_count(0)
    await expect(page.get_by_role("button", name=re.compile("Roll back"))).to_have_count(0)
    # The routes refuse a viewer too (the same rule as the API), and nothing changes.
    r = await page.request.post(f"{server.api}/orgs/{org}/projects/site/deployments/rollback",
                                form={"version": "1"}, headers={"x-csrf-token": await _csrf(page)})
    assert r.status == 403
    assert [d["live"] for d in await _versions(http, auth, org, "site")] == [True, False]


async def test_versions_are_paged_newest_first(server: Server, contexts, http) -> None:
    owner = "deploy-hilbert"
    auth = await _project(http, owner, "site")
    body = bundle({"assets/index.html": _page("Same")})
    for _ in range(52):
        r = await http.post(f"/v1/orgs/{owner}/projects/site/deployments", content=body,
                            headers={**auth, "content-type": "application/gzip"})
        assert r.status_code == 201, r.text
    context = await contexts()
    page = await sign_in(context, server, owner, next_path=f"/orgs/{owner}/projects/site/deployments")
    rows = page.locator("#deployments tbody tr")
    await expect(rows).to_have_count(50)
    await expect(rows.first.get_by_role("rowheader")).to_have_text(re.compile(r"^v52"))
    await page.get_by_role("link", name="Older versions").click()
    await expect(rows).to_have_count(2)
    await expect(rows.first.get_by_role("rowheader")).to_have_text("v2")
    await expect(page.get_by_role("link", name="Older versions")).to_have_count(0)
    await page.get_by_role("link", name="Newest versions").click()
    await expect(rows).to_have_count(50)


async def _csrf(page: Page) -> str:
    headers = await page.locator("body").get_attribute("hx-headers")
    assert headers
    token: str = json.loads(headers)["X-CSRF-Token"]
    return token
