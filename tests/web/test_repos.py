"""A project's repositories in a real browser, pushed to with the real git CLI: create one (a bad
name refused in words next to its field), tokens limited to the project made on the tokens page
(one read-only: it clones, never pushes), a push deployed and served at the edge, the tree, files
highlighted, a binary file said, another branch picked, the commits and the ref history (a
force-pushed commit fetched back by the id the page gives), a rename the old remote survives, a
viewer who looks but changes nothing, and delete."""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path

import httpx
from playwright.async_api import Dialog, Page, expect

from tests.support.serve import Server
from tests.web.conftest import look, sign_in

OWNER, VIEWER, ORG, PROJECT = "repo-ada", "repo-vic", "repo-team", "web"
PAGE = f"/orgs/{ORG}/projects/{PROJECT}"

SITE = {
    "svc.json": '{"name": "web"}\n',
    "assets/index.html": "<!doctype html><title>From git</title><h1>Pushed with git</h1>\n",
    "assets/app.js": "function greet(name) {\n  return `hello ${name}`;\n}\n",
    "tools/build.py": "def build(folder: str) -> None:\n    print('<built>', folder)\n",
}


class Git:
    """The git CLI with a home of its own (no system or user config leaks in)."""

    def __init__(self, home: Path) -> None:
        home.mkdir(parents=True, exist_ok=True)
        self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LC_ALL": "C",
                    "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0", "GIT_AUTHOR_NAME": "Ada",
                    "GIT_AUTHOR_EMAIL": "ada@example.com", "GIT_COMMITTER_NAME": "Ada",
                    "GIT_COMMITTER_EMAIL": "ada@example.com"}

    async def __call__(self, *args: str, cwd: Path | None = None, ok: bool = True) -> tuple[int, str]:
        process = await asyncio.create_subprocess_exec("git", *args, cwd=cwd, env=self.env,
                                                       stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(process.communicate(), timeout=120)
        said = out.decode(errors="replace") + err.decode(errors="replace")
        if ok:
            assert process.returncode == 0, f"git {' '.join(args)} failed:\n{said}"
        return process.returncode or 0, said


def with_token(url: str, token: str) -> str:
    """A clone URL with the token as Basic auth's password (the username is ignored)."""
    return url.replace("://", f"://anyone:{token}@", 1)


async def _accept(dialog: Dialog) -> None:
    await dialog.accept()


async def _token(page: Page, server: Server, name: str, *, read_only: bool) -> str:
    """A token limited to the project, made on the tokens page; its limits read back in the list."""
    await page.goto(server.api + "/account/tokens")
    await page.get_by_label("Name").fill(name)
    await page.get_by_label("Project").select_option(f"{ORG}/{PROJECT}")
    if read_only:
        await page.get_by_label("Read-only").check()
    await page.get_by_role("button", name="Create token").click()
    shown = page.locator(".token-secret code.secret-value")
    await expect(shown).to_be_visible()
    token = (await shown.inner_text()).strip()
    row = page.get_by_role("row", name=re.compile(name))
    await expect(row).to_contain_text(f"project {ORG}/{PROJECT}")
    if read_only:
        await expect(row).to_contain_text("read-only")
    else:
        await expect(row).not_to_contain_text("read-only")
    return token


async def test_repositories_pushed_browsed_renamed_looked_at_and_deleted(
        server: Server, contexts, http: httpx.AsyncClient, tmp_path: Path) -> None:
    r = await http.post("/v1/auth/dev/login", json={"subject": OWNER})
    auth = {"authorization": f"Bearer {r.json()['token']}"}
    r = await http.post("/v1/orgs", json={"slug": ORG}, headers=auth)
    assert r.status_code == 201, r.text
    git = Git(tmp_path / "home")

    page = await sign_in(await contexts(), server, OWNER, next_path=f"/orgs/{ORG}/projects")
    page.on("dialog", _accept)
    await page.get_by_label("Name").fill(PROJECT)
    await page.get_by_role("button", name="Create project").click()
    await expect(page).to_have_url(re.compile(f"{PAGE}$"))
    tabs = page.get_by_role("navigation", name="Project")
    await tabs.get_by_role("link", name="Repositories").click()
    await expect(page.get_by_role("heading", name=f"{PROJECT}: repositories", level=1)).to_be_visible()
    await expect(tabs.get_by_role("link", name="Repositories")).to_have_attribute("aria-current", "page")
    # None yet: the page says how to push a first one.
    await expect(page.get_by_text("No repositories yet.")).to_be_visible()
    await expect(page.locator(".first-push")).to_contain_text(f"git remote add svc {server.api}/git/{ORG}/{PROJECT}/")
    await expect(page.locator(".first-push")).to_contain_text("svc git-credential install")

    # A name git's URL would double is refused next to its field, what was typed kept; nothing made.
    await page.get_by_label("Name").fill("x.git")
    await page.get_by_role("button", name="Create repository").click()
    await expect(page.locator("#repo-name-error")).to_contain_text("Name must not end in '.git'")
    await expect(page.get_by_role("alert")).to_contain_text("Not saved")
    await expect(page.get_by_label("Name")).to_have_value("x.git")
    assert (await http.get(f"/v1{PAGE}/repos", headers=auth)).json()["repos"] == []

    await page.get_by_label("Name").fill("site")
    await page.get_by_role("button", name="Create repository").click()
    await expect(page).to_have_url(re.compile(f"{PAGE}/repos/site$"))
    await expect(page.get_by_role("status").first).to_have_text("Repository site created: push to it to fill it.")
    await expect(page.get_by_text("Nothing pushed yet")).to_be_visible()
    clone_url = (await page.locator(".repo-facts code.secret-value").first.inner_text()).strip()
    assert clone_url == f"{server.api}/git/{ORG}/{PROJECT}/site.git"
    await expect(page.locator("pre")).to_contain_text(f"git remote add svc {clone_url}\ngit push svc main")

    # Tokens limited to the project, from the tokens page: one that pushes, one read-only.
    push_token = await _token(page, server, "repo push", read_only=False)
    read_token = await _token(page, server, "repo read", read_only=True)

    # A site pushed with git: deployed, and served at the edge.
    work = tmp_path / "work"
    await git("init", "-q", "-b", "main", str(work))
    for name, text in SITE.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    (work / "assets" / "pixel.bin").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x01")
    await git("add", ".", cwd=work)
    await git("commit", "-qm", "the site", cwd=work)
    code, said = await git("push", with_token(clone_url, read_token), "main", cwd=work, ok=False)
    assert code != 0 and "read-only" in said
    _, said = await git("push", with_token(clone_url, push_token), "main", cwd=work)
    assert f"to {ORG}/{PROJECT} as version 1" in said, said
    site = await page.context.new_page()
    await site.goto(server.edge(f"{PROJECT}-{ORG}.localhost") + "/")
    await expect(site.get_by_role("heading", level=1)).to_have_text("Pushed with git")
    await site.close()
    await git("clone", with_token(clone_url, read_token), str(tmp_path / "read-clone"))  # a read-only token clones

    # Another branch, and the repository page: clone URLs, the tree at the root of main.
    await git("checkout", "-q", "-b", "feature", cwd=work)
    (work / "FEATURE.md").write_text("# A feature\n")
    await git("add", ".", cwd=work)
    await git("commit", "-qm", "a feature", cwd=work)
    await git("push", with_token(clone_url, push_token), "feature", cwd=work)
    await page.goto(server.api + f"{PAGE}/repos/site")
    files = page.locator(".repo-tree")
    for entry in ("assets/", "tools/", "svc.json"):
        await expect(files.get_by_role("link", name=entry, exact=True)).to_be_visible()
    await expect(files.get_by_role("link", name="FEATURE.md")).to_have_count(0)
    await expect(page.get_by_role("button", name="Copy HTTPS URL")).to_be_visible()
    await look(page, "repos-repository")
    # Picking a branch shows its tree.
    await page.get_by_label("Branch or tag").select_option("feature")
    await expect(page).to_have_url(re.compile(r"\?ref=feature$"))
    await expect(files.get_by_role("link", name="FEATURE.md")).to_be_visible()
    await page.get_by_label("Branch or tag").select_option("main")
    await expect(files.get_by_role("link", name="FEATURE.md")).to_have_count(0)

    # The tree, with breadcrumbs; files highlighted; a binary file said, not shown.
    await files.get_by_role("link", name="assets/").click()
    await expect(page.get_by_role("heading", name="site: assets", level=1)).to_be_visible()
    crumbs = page.get_by_role("navigation", name="Breadcrumb")
    await expect(crumbs).to_contain_text("Repositories / site / assets")
    await expect(page.locator(".repo-tree tbody tr")).to_have_count(3)
    await look(page, "repos-tree")
    await page.locator(".repo-tree").get_by_role("link", name="pixel.bin").click()
    await expect(page.get_by_text("This is a binary file")).to_be_visible()
    await expect(page.locator(".code-view")).to_have_count(0)
    await page.go_back()
    await page.locator(".repo-tree").get_by_role("link", name="app.js").click()
    await expect(page.get_by_role("heading", name="site: assets/app.js", level=1)).to_be_visible()
    code_view = page.get_by_role("region", name="Contents of assets/app.js")
    await expect(code_view.locator(".highlight span.kd").first).to_have_text("function")  # Pygments' token class
    await expect(code_view).to_contain_text("return `hello ${name}`;")
    await expect(page.get_by_text("JavaScript")).to_be_visible()
    await look(page, "repos-file")
    await crumbs.get_by_role("link", name="site").click()
    await page.locator(".repo-tree").get_by_role("link", name="tools/").click()
    await page.locator(".repo-tree").get_by_role("link", name="build.py").click()
    await expect(page.locator(".highlight span.k").first).to_have_text("def")
    # Escaped by Pygments: the file's "<built>" is text on the page, not an element.
    await expect(page.locator(".code-view")).to_contain_text("'<built>'")
    assert await page.locator(".code-view built").count() == 0
    await page.goto(server.api + f"{PAGE}/repos/site/blob?path=svc.json")
    await expect(page.locator(".highlight span.nt").first).to_have_text('"name"')
    # An unknown path or ref is the app's 404 page.
    missing = await page.goto(server.api + f"{PAGE}/repos/site/tree?path=nowhere")
    assert missing is not None and missing.status == 404
    await expect(page.get_by_text("No such path at this ref")).to_be_visible()
    missing = await page.goto(server.api + f"{PAGE}/repos/site/tree?ref=nobranch&path=assets")
    assert missing is not None and missing.status == 404
    await expect(page.get_by_text("No such branch, tag or commit")).to_be_visible()

    # A force-push replaces main's commit; the commits and the ref history say so, and the commit
    # it left behind is fetched back by the id the history gives.
    await git("checkout", "-q", "main", cwd=work)
    first = (await git("rev-parse", "HEAD", cwd=work))[1].strip()
    (work / "assets" / "index.html").write_text("<!doctype html><title>Again</title><h1>Amended</h1>\n")
    await git("commit", "-qam", "the site, amended", "--amend", cwd=work)
    await git("push", "--force", with_token(clone_url, push_token), "main", cwd=work)
    await page.goto(server.api + f"{PAGE}/repos/site")
    await page.get_by_role("navigation", name="Repository").get_by_role("link", name="Commits").click()
    await expect(page.get_by_role("heading", name="site: commits", level=1)).to_be_visible()
    rows = page.locator(".commit-list tbody tr")
    await expect(rows).to_have_count(1)
    await expect(rows.first).to_contain_text("the site, amended")
    await expect(rows.first).to_contain_text("Ada <ada@example.com>")
    await page.get_by_label("Branch or tag").select_option("feature")
    await expect(rows).to_have_count(2)
    await expect(rows.first).to_contain_text("a feature")
    await look(page, "repos-commits")
    await page.goto(server.api + f"{PAGE}/repos/site")
    await page.get_by_role("navigation", name="Repository").get_by_role("link", name="Ref history").click()
    await expect(page.get_by_role("heading", name="site: ref history", level=1)).to_be_visible()
    history = page.locator(".ref-history tbody tr")
    await expect(history).to_have_count(3)  # main, feature, main again (newest first)
    forced = history.first
    await expect(forced).to_contain_text(f"{first[:8]} →")
    await expect(forced).to_contain_text(OWNER)
    await expect(forced.get_by_role("link", name="version 2")).to_have_attribute("href", f"{PAGE}/deployments")
    await expect(history.last.get_by_role("link", name="version 1")).to_be_visible()
    await expect(history.last).to_contain_text("nothing: the ref was created")
    await expect(forced.locator("button[data-copy]")).to_have_attribute("data-copy", first)
    await expect(page.get_by_text("git fetch origin <id>")).to_be_visible()
    await look(page, "repos-ref-history")
    rescue = tmp_path / "read-clone"
    await git("fetch", "-q", "origin", first, cwd=rescue)
    assert (await git("cat-file", "-t", first, cwd=rescue))[1].strip() == "commit"

    # The list, with a name already taken refused in words next to its field.
    await tabs.get_by_role("link", name="Repositories").click()
    row = page.get_by_role("row", name=re.compile("site"))
    await expect(row).to_contain_text("private")
    await expect(row).to_contain_text("main")
    await expect(row.locator("button[data-copy]")).to_have_attribute("data-copy", clone_url)
    await page.get_by_label("Name").fill("site")
    await page.get_by_role("button", name="Create repository").click()
    await expect(page.locator("#repo-name-error")).to_contain_text("has a repository of that name already")
    await look(page, "repos-list")

    # Renamed (a name refused first, in words); the old remote keeps working.
    await row.get_by_role("link", name="site").click()
    settings = page.get_by_role("form", name="Repository settings")
    await settings.get_by_label("Name").fill("web site")
    await settings.get_by_role("button", name="Save settings").click()
    await expect(page.locator("#settings-name-error")).to_contain_text("Name must start with a letter")
    await settings.get_by_label("Name").fill("website")
    await settings.get_by_label("Visibility").select_option("public")
    await settings.get_by_role("button", name="Save settings").click()
    await expect(page).to_have_url(re.compile(f"{PAGE}/repos/website$"))
    await expect(page.get_by_role("status").first).to_contain_text("Renamed to website")
    await expect(page.get_by_role("heading", name=f"{PROJECT}/website", level=1)).to_be_visible()
    repo = (await http.get(f"/v1{PAGE}/repos/website", headers=auth)).json()
    assert repo["visibility"] == "public" and repo["cloneUrl"].endswith("/website.git")
    await git("ls-remote", with_token(clone_url, read_token))  # the old name still reaches it

    # A viewer looks, and is offered no change.
    viewer = await sign_in(await contexts(), server, VIEWER)
    r = await http.post(f"/v1/orgs/{ORG}/members", json={"provider": "dev", "subject": VIEWER, "role": "viewer"},
                        headers=auth)
    assert r.status_code == 201, r.text
    await viewer.goto(server.api + f"{PAGE}/repos")
    await expect(viewer.get_by_role("link", name="website")).to_be_visible()
    await expect(viewer.get_by_text("You are a viewer: a member of the org creates repositories.")).to_be_visible()
    assert await viewer.get_by_role("button", name="Create repository").count() == 0
    await viewer.get_by_role("link", name="website").click()
    await expect(viewer.locator(".repo-tree").get_by_role("link", name="svc.json")).to_be_visible()
    await expect(viewer.get_by_text("an admin of the org renames, changes and deletes")).to_be_visible()
    assert await viewer.get_by_role("form", name="Repository settings").count() == 0
    assert await viewer.get_by_role("button", name=re.compile("Delete")).count() == 0
    assert await viewer.locator("main form[method=post]").count() == 0
    # A post all the same (with a valid CSRF token) is refused by role, and makes nothing.
    headers = await viewer.locator("body").get_attribute("hx-headers")
    assert headers
    posted = await viewer.request.post(server.api + f"{PAGE}/repos",
                                       form={"csrf": json.loads(headers)["X-CSRF-Token"], "name": "sneaky"})
    assert posted.status == 403
    assert [r["name"] for r in (await http.get(f"/v1{PAGE}/repos", headers=auth)).json()["repos"]] == ["website"]

    # Deleted, with its name typed: gone from the list and from git.
    await page.get_by_label("Type website to confirm").fill("website")
    await page.get_by_role("button", name="Delete website").click()
    await expect(page).to_have_url(re.compile(f"{PAGE}/repos$"))
    await expect(page.get_by_role("status").first).to_contain_text("Repository website deleted")
    await expect(page.get_by_text("No repositories yet.")).to_be_visible()
    code, _ = await git("ls-remote", with_token(clone_url, read_token), ok=False)
    assert code != 0
