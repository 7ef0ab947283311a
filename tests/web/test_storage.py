"""The Storage tab in a real browser, against the dashboard's `svc serve` (its object store: files
under its data directory): a member grants storage and sees the usage bar against the plan's
quota; uploads a file at the top and one into a folder by naming it; a key with a ".." segment is
refused in words in the form; the folders browse by "/", a page of 50 at a time; an object
downloads as it was uploaded and is deleted (asked first); a viewer sees it all with nothing to
change, and a delete posted all the same is refused; the admin revokes, and the objects are kept."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
from playwright.async_api import BrowserContext, expect

from tests.support.serve import Server
from tests.web.conftest import look, sign_in
from tests.web.test_access_secrets import _accept, _csrf

OWNER, MEMBER, VIEWER, ORG = "stw-owner", "stw-member", "stw-viewer", "stw-team"
TAB = f"/orgs/{ORG}/projects/site/storage"
MANY = 53  # more than a page of the browser (50)


async def _token(http: httpx.AsyncClient, subject: str) -> dict[str, str]:
    r = await http.post("/v1/auth/dev/login", json={"subject": subject})
    assert r.status_code == 200, r.text
    return {"authorization": f"Bearer {r.json()['token']}"}


async def test_grant_upload_browse_download_delete_viewer_and_revoke(
        server: Server, http: httpx.AsyncClient, contexts: Callable[..., Awaitable[BrowserContext]],
        tmp_path: Path) -> None:
    owner = await _token(http, OWNER)
    assert (await http.post("/v1/orgs", json={"slug": ORG, "name": "Storage team"}, headers=owner)).status_code == 201
    assert (await http.post(f"/v1/orgs/{ORG}/projects", json={"name": "site"}, headers=owner)).status_code == 201
    for subject, role in ((MEMBER, "member"), (VIEWER, "viewer")):
        await _token(http, subject)
        r = await http.post(f"/v1/orgs/{ORG}/members", json={"provider": "dev", "subject": subject, "role": role},
                            headers=owner)
        assert r.status_code == 201, r.text

    # 1. The member opens the tab: not granted, the plan's quota, a grant button, no browser yet.
    page = await sign_in(await contexts(), server, MEMBER, next_path=f"/orgs/{ORG}/projects/site")
    await page.get_by_role("navigation", name="Project").get_by_role("link", name="Storage", exact=True).click()
    await expect(page.get_by_role("heading", name="site: Storage", level=1)).to_be_visible()
    await expect(page.get_by_role("heading", name="Not granted")).to_be_visible()
    await expect(page.locator("#storage-usage")).to_contain_text("Used 0 bytes of 1.0 GiB (0.0%)")
    await expect(page.get_by_role("button", name="Upload")).to_have_count(0)
    await expect(page.get_by_role("button", name="Revoke storage")).to_have_count(0)

    await page.get_by_role("button", name="Grant storage").click()
    await expect(page.get_by_role("status").first).to_have_text(
        "Storage granted: the worker gets env.storage on its next request.")
    await expect(page.get_by_role("heading", name="Granted", exact=True)).to_be_visible()
    status = (await http.get(f"/v1{TAB}", headers=owner)).json()
    assert status["granted"] is True
    await expect(page.locator("#storage-status")).to_contain_text(status["prefix"])
    await expect(page.get_by_text("No objects yet.")).to_be_visible()
    await expect(page.get_by_role("button", name="Revoke storage")).to_have_count(0)  # a member: no revoke

    # 2. Uploads: a file under its own name at the top, one into a folder by naming it.
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"the first object\n")
    logo = tmp_path / "logo.png"
    logo.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 6000)  # past the 1 MiB cap of a form
    await page.get_by_label("File", exact=True).set_input_files(str(notes))
    await page.get_by_role("button", name="Upload", exact=True).click()
    await expect(page.get_by_role("status").first).to_have_text("Uploaded notes.txt (17 bytes).")
    await page.get_by_label("File", exact=True).set_input_files(str(logo))
    await page.get_by_role("textbox", name="Name").fill("img/logo.png")
    await page.get_by_role("button", name="Upload", exact=True).click()
    await expect(page.get_by_role("status").first).to_have_text("Uploaded img/logo.png (1.5 MiB).")
    objects = page.get_by_role("table", name="Objects")
    await expect(objects.get_by_role("row")).to_have_count(3)  # the header, img/, notes.txt
    await expect(objects.get_by_role("row").nth(1)).to_contain_text("img/")
    await expect(objects.get_by_role("row").nth(2)).to_contain_text("notes.txt")
    await expect(objects.get_by_role("row").nth(2)).to_contain_text("text/plain")
    used = (17 + logo.stat().st_size) / 1024**2
    await expect(page.locator("#storage-usage")).to_contain_text(f"Used {used:.1f} MiB")

    # 3. A key that is not one is refused in words in the form; nothing is stored.
    await page.get_by_label("File", exact=True).set_input_files(str(notes))
    await page.get_by_role("textbox", name="Name").fill("img/../escape.txt")
    await page.get_by_role("button", name="Upload", exact=True).click()
    alert = page.locator("#storage-upload").get_by_role("alert")
    await expect(alert).to_contain_text('must not have a "." or ".." segment')
    listed = (await http.get(f"/v1{TAB}/objects", headers=owner)).json()
    assert [o["key"] for o in listed["objects"]] == ["img/logo.png", "notes.txt"]

    # 4. Browse into the folder; download what was uploaded, as it was.
    await objects.get_by_role("link", name="img/").click()
    await expect(page).to_have_url(re.compile(r"prefix=img%2F"))
    await expect(page.get_by_role("navigation", name="Folder")).to_contain_text("All objects")
    await expect(objects.get_by_role("row")).to_have_count(2)
    await expect(objects.get_by_role("row").nth(1)).to_contain_text("logo.png")
    await expect(objects.get_by_role("row").nth(1)).to_contain_text("image/png")
    await look(page, "storage-project")
    async with page.expect_download() as downloading:
        await page.get_by_role("button", name="Download logo.png").click()
    download = await downloading.value
    assert download.suggested_filename == "logo.png"
    assert Path(await download.path()).read_bytes() == logo.read_bytes()

    # 5. Delete, asked first: gone from the folder and from the usage.
    page.once("dialog", _accept)
    await page.get_by_role("button", name="Delete logo.png").click()
    await expect(page.get_by_role("status").first).to_have_text("Deleted img/logo.png.")
    await expect(page.get_by_text("Nothing under img/.")).to_be_visible()
    await page.get_by_role("navigation", name="Folder").get_by_role("link", name="All objects").click()
    await expect(page.locator("#storage-usage")).to_contain_text("Used 17 bytes of 1.0 GiB")

    # 6. A folder of more than a page: 50, then the rest, then back to the first page.
    for i in range(MANY):
        r = await http.put(f"/v1{TAB}/objects/many/{i:03}.txt", content=b"x", headers=owner)
        assert r.status_code == 200, r.text
    await page.goto(server.api + TAB + "?prefix=many/")
    await expect(objects.locator("tbody tr")).to_have_count(50)
    await expect(objects.locator("tbody tr").first).to_contain_text("000.txt")
    await page.get_by_role("button", name="More objects").click()
    await expect(objects.locator("tbody tr")).to_have_count(MANY - 50)
    await expect(objects.locator("tbody tr").last).to_contain_text(f"{MANY - 1:03}.txt")
    await expect(page.get_by_role("button", name="More objects")).to_have_count(0)
    await page.get_by_role("button", name="First page").click()
    await expect(objects.locator("tbody tr")).to_have_count(50)

    # 7. A viewer browses and downloads, with no grant, upload, delete or revoke; a delete posted
    # all the same is refused, and the object stays.
    viewer = await sign_in(await contexts(), server, VIEWER, next_path=TAB)
    await expect(viewer.get_by_role("heading", name="Granted", exact=True)).to_be_visible()
    await expect(viewer.get_by_role("table", name="Objects").get_by_role("row")).to_have_count(3)
    await expect(viewer.get_by_role("button", name="Download notes.txt")).to_be_visible()
    for name in ("Upload", "Delete notes.txt", "Grant storage", "Revoke storage"):
        await expect(viewer.get_by_role("button", name=name, exact=True)).to_have_count(0)
    refused = await viewer.request.post(server.api + TAB + "/delete",
                                        form={"csrf": await _csrf(viewer), "key": "notes.txt"})
    assert refused.status == 403
    assert (await http.head(f"/v1{TAB}/objects/notes.txt", headers=owner)).status_code == 200

    # 8. The admin revokes (asked first): env.storage goes, the objects are kept for a new grant.
    admin = await sign_in(await contexts(), server, OWNER, next_path=TAB)
    admin.once("dialog", _accept)
    await admin.get_by_role("button", name="Revoke storage").click()
    await expect(admin.get_by_role("status").first).to_have_text(
        "Storage revoked: the worker no longer has env.storage. The objects are kept.")
    await expect(admin.get_by_role("heading", name="Not granted")).to_be_visible()
    await expect(admin.get_by_text("Objects are listed here once storage is granted")).to_be_visible()
    r = await http.get(f"/v1{TAB}/objects", headers=owner)
    assert r.status_code == 404 and r.json()["code"] == "not_granted"
    await admin.get_by_role("button", name="Grant storage").click()
    await expect(admin.get_by_role("table", name="Objects").locator("tbody tr")).to_have_count(2)  # many/, notes.txt
