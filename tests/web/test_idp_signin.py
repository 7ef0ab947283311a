"""Signing in to the dashboard through the identity provider (the fake GitHub, a real HTTP server
speaking GitHub's OAuth protocol), and what stops a sign-in link made for someone else."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest
from playwright.async_api import expect

from svc.adapters.idp.fake import FakeIdp, running_fake_idp
from tests.support.serve import Server, svc_serve


@pytest.fixture(scope="module")
async def idp_server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Server]:
    async with running_fake_idp(FakeIdp()) as fake:
        env = {f"SVC_{k.upper()}": str(v) for k, v in fake.svc_settings("github").items()}
        async with svc_serve(tmp_path_factory.mktemp("idp-dashboard"), **env) as running:
            yield running


async def test_sign_in_with_the_identity_provider(idp_server: Server, contexts) -> None:
    context = await contexts(also=idp_server)
    page = await context.new_page()
    await page.goto(idp_server.api + "/orgs/new")  # a deep link: sign in, then back here
    await expect(page).to_have_url(re.compile(r"/signin\?next="))
    await page.get_by_role("button", name="Sign in with GitHub").click()
    await expect(page).to_have_url(re.compile(r"/orgs/new$"))
    await expect(page.get_by_text("Signed in as")).to_contain_text("Alice")
    assert "token" not in page.url  # the fragment was consumed and dropped
    cookies = {c["name"]: c for c in await context.cookies()}
    assert cookies["svc_session"]["httpOnly"]


async def test_a_sign_in_link_with_someone_elses_token_is_refused(idp_server: Server, contexts) -> None:
    """An attacker who sends a person /signin/complete#token=<the attacker's session> must not sign
    them in as the attacker: the page's binding is the person's own, and it does not match."""
    # The attacker's own session, from the provider.
    context = await contexts(also=idp_server)
    page = await context.new_page()
    await page.goto(idp_server.api + "/signin")
    await page.get_by_role("button", name="Sign in with GitHub").click()
    await expect(page).to_have_url(re.compile(r"/orgs/[^/]+/projects$"))  # the personal org
    token = next(c["value"] for c in await context.cookies() if c["name"] == "svc_session")
    victim = await (await contexts(also=idp_server)).new_page()
    # A browser that never opened the sign-in page: the post has no binding at all, and is refused.
    await victim.goto(f"{idp_server.api}/signin/complete?b=forged&next=/#token={token}")
    await expect(victim.get_by_role("heading", name="Sign in to svc")).to_be_visible()
    assert not [c for c in await victim.context.cookies() if c["name"] == "svc_session"]
    # One that did (its own binding cookie), sent a link with a binding made for another browser.
    await victim.goto(f"{idp_server.api}/signin")
    await victim.goto(f"{idp_server.api}/signin/complete?b=forged&next=/#token={token}")
    await expect(victim.get_by_role("alert")).to_contain_text("not started in this browser")
    assert not [c for c in await victim.context.cookies() if c["name"] == "svc_session"]
