"""Identity-provider login rules: the redirect allowlist, login states, and the callback's outcome.

A login is two requests. /start checks the client's redirect, keeps a LoginState (hash of the random
state, the redirect, the PKCE verifier, the nonce; 10 minutes) and sends the browser to the provider.
/callback reads that row, lets the adapter prove who signed in, then takes the row (single use: of two
callbacks with one state only one takes it) and signs them in. The provider is never reached while
the store is held: /start writes after it, /callback reads before and writes after (READ_THEN_WRITE).
"""

from __future__ import annotations

import base64
import hashlib
import logging
import re
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import quote, urlencode

from sqlalchemy import delete

from svc.adapters.idp.port import IdentityProvider, IdpError, IdpIdentity
from svc.adapters.idp.settings import IdpSettings
from svc.context import AppContext
from svc.domains.identity.errors import (
    LoginOtherBrowser,
    LoginStateInvalid,
    ProviderRefused,
    RedirectNotAllowed,
    UnknownProvider,
)
from svc.domains.identity.idp_schemas import MAX_CODE, MAX_ERROR, MAX_REDIRECT, MAX_STATE, LoginFailure
from svc.domains.identity.schemas import Session
from svc.domains.identity.service import sign_in
from svc.domains.identity.settings import IdentitySettings
from svc.errors import AppError
from svc.kit import urls
from svc.kit.clock import utcnow
from svc.kit.store_session import StoreSession
from svc.kit.tokens import token_hash
from svc.models import LoginState
from svc.settings import Config
from svc.uow import Tx, UnitOfWork, use_case

log = logging.getLogger("svc.identity")

STATE_TTL = timedelta(minutes=10)
# Every answer of the login routes: never cached, and no Referer to the provider or the client.
NO_STORE = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}


# --- the redirect allowlist ---

def provider_for_page(ctx: AppContext, page_url: str) -> str | None:
    """The identity provider a browser page may offer for signing in and coming back to
    `page_url`: None when none is configured or the page is not under SVC_IDP_REDIRECTS (logged,
    since the operator most likely meant to allow it)."""
    idp = ctx.adapters.idp
    if idp is None:
        return None
    try:
        check_redirect(page_url, _redirects(ctx.config))
    except AppError:
        log.warning("%s is not under SVC_IDP_REDIRECTS: its identity-provider sign-in is hidden", page_url)
        return None
    return idp.name


def check_redirect(redirect: str, allowlist: list[str]) -> str:
    """The redirect if it lies under one allowlist prefix: same scheme, host and port (any port for a
    loopback IP prefix written without one), and a path under the prefix's path (by whole segments
    unless the prefix ends with '/'). Else 400."""
    if len(redirect) <= MAX_REDIRECT and any(urls.under(redirect, entry) for entry in allowlist):
        return redirect
    raise RedirectNotAllowed(headers=NO_STORE)


# --- /start ---


@dataclass(frozen=True)
class PendingLogin:
    state: str
    code_verifier: str
    code_challenge: str
    nonce: str

    @property
    def state_hash(self) -> str:
        return token_hash(self.state)


def provider_for(configured: IdentityProvider | None, name: str) -> IdentityProvider:
    if configured is None or configured.name != name:
        raise UnknownProvider(headers=NO_STORE)
    return configured


def _redirects(config: Config) -> list[str]:
    """Where a login may send the browser back to (SVC_IDP_REDIRECTS, else the public URL)."""
    return config.settings_of(IdpSettings).redirect_allowlist(config.settings.public_url)


def callback_url(config: Config, provider: IdentityProvider) -> str:
    return f"{config.settings.public_url}/v1/auth/{provider.name}/callback"


def new_login() -> PendingLogin:
    verifier = secrets.token_urlsafe(48)  # 64 characters (RFC 7636: 43 to 128)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return PendingLogin(state=secrets.token_urlsafe(32), code_verifier=verifier, code_challenge=challenge,
                        nonce=secrets.token_urlsafe(24))


async def authorize_url(idp: IdentityProvider, login: PendingLogin, redirect_uri: str) -> str:
    """The provider's page for this login (may reach the provider: OIDC discovery). Raises IdpError."""
    return await idp.authorize_url(state=login.state, redirect_uri=redirect_uri,
                                   code_challenge=login.code_challenge, nonce=login.nonce)


@dataclass(frozen=True)
class Started:
    """Where the browser goes next, and the binding cookie to set (None when the start failed)."""

    location: str
    state_hash: str | None


@use_case(Tx.WRITE)  # a GET (browser navigation) that records the login state
async def start(uow: UnitOfWork, *, configured: IdentityProvider | None, provider: str, redirect: str,
                config: Config) -> Started:
    """/start: the provider's authorize page for a new login, or the client's redirect with the
    error when the provider cannot be asked (e.g. OIDC discovery failed)."""
    provider_ = provider_for(configured, provider)
    target = check_redirect(redirect, _redirects(config))
    login = new_login()
    try:
        url = await authorize_url(provider_, login, callback_url(config, provider_))
    except IdpError as exc:  # the client learns it at its own callback
        log.warning("identity-provider sign-in could not start: provider=%s reason=%s", provider_.name, exc)
        return Started(location=failure_location(target, exc.code), state_hash=None)
    await _save_login(uow.session, login, target)
    log.info("identity-provider sign-in started: provider=%s", provider_.name)
    return Started(location=url, state_hash=login.state_hash)


@dataclass(frozen=True)
class Finished:
    location: str
    state_hash: str


@use_case(Tx.READ_THEN_WRITE)  # the provider is asked with nothing of the store held
async def finish(uow: UnitOfWork, *, configured: IdentityProvider | None, provider: str, state: str | None,
                 cookies: dict[str, str], code: str | None, error: str | None, config: Config) -> Finished:
    """/callback (READ_THEN_WRITE): the login's row must exist and come back to the browser that
    started it; the provider proves who signed in; then the row is taken (once) and the person
    signed in. Where the browser goes: the client's redirect with the session or the error."""
    provider_ = provider_for(configured, provider)
    login = await _find_login(uow.session, state)
    cookie, _, _ = binding_cookie(config, login.state_hash)
    if cookies.get(cookie) != "1":
        raise LoginOtherBrowser(headers=NO_STORE)  # the row stays: the right browser may still finish
    await uow.close_reads()
    try:
        who = await identify(provider_, login, code=code, error=error,
                             redirect_uri=callback_url(config, provider_))
    except IdpError as exc:
        log.warning("identity-provider sign-in failed: provider=%s code=%s reason=%s", provider_.name, exc.code, exc)
        await _take_login(await uow.begin_write(), login.state_hash)
        return Finished(location=failure_location(login.redirect, exc.code), state_hash=login.state_hash)
    session = await uow.begin_write()
    await _take_login(session, login.state_hash)
    user, token, row = await sign_in(uow, provider=provider_.name, subject=who.subject, email=who.email,
                                     name=who.name, session_days=config.settings_of(IdentitySettings).session_days)
    log.info("identity-provider sign-in: provider=%s user=%s", provider_.name, user.id)
    body = Session(token=token, expires_at=row.expires_at, user_id=user.id, subject=user.subject)
    return Finished(location=success_location(login.redirect, body), state_hash=login.state_hash)


async def _save_login(session: StoreSession, login: PendingLogin, redirect: str) -> None:
    now = utcnow()
    # Housekeeping: logins nobody finished are of no use once expired.
    await session.execute(delete(LoginState).where(LoginState.expires_at < now))
    session.add(LoginState(state_hash=login.state_hash, redirect=redirect, code_verifier=login.code_verifier,
                           nonce=login.nonce, created_at=now, expires_at=now + STATE_TTL))
    await session.flush()


# --- /callback ---


async def _find_login(session: StoreSession, state: str | None) -> LoginState:
    """The login's row: a state works only within its 10 minutes."""
    if not state or len(state) > MAX_STATE:
        raise LoginStateInvalid("state is missing or malformed", headers=NO_STORE)
    row = await session.get(LoginState, token_hash(state))
    if row is None or row.expires_at <= utcnow():
        raise LoginStateInvalid(headers=NO_STORE)
    return row


async def _take_login(session: StoreSession, state_hash: str) -> None:
    """Remove the login's row: a state works once. Of two callbacks with one state (a replay, a
    double submit), the one that finds the row gone is refused."""
    result: Any = await session.execute(delete(LoginState).where(LoginState.state_hash == state_hash))
    if result.rowcount != 1:
        raise LoginStateInvalid(headers=NO_STORE)


async def identify(idp: IdentityProvider, login: LoginState, *, code: str | None, error: str | None,
                   redirect_uri: str) -> IdpIdentity:
    """Who the provider says signed in; raises IdpError (ProviderRefused for an `error` answer)."""
    if error is not None:
        raise ProviderRefused(_safe_code(error))
    if not code or len(code) > MAX_CODE:
        raise IdpError("the identity provider sent no usable code")
    return await idp.exchange(code=code, redirect_uri=redirect_uri, code_verifier=login.code_verifier,
                              nonce=login.nonce or "")


def _safe_code(error: str) -> str:
    """OAuth error codes are short ASCII tokens; anything else is reported as idp_error."""
    if 0 < len(error) <= min(MAX_ERROR, 64) and re.fullmatch(r"[a-z0-9_]+", error):
        return error
    return "idp_error"


_MESSAGES = {
    "access_denied": "Sign-in was cancelled at the identity provider",
    "idp_unavailable": "The identity provider could not be reached; try again later",
    "login_failed": "The identity provider did not confirm who you are; start again",
}


def failure_location(redirect: str, code: str) -> str:
    message = _MESSAGES.get(code, "The identity provider refused the sign-in")
    fragment = LoginFailure(error=code, message=message).model_dump(mode="json", by_alias=True)
    return f"{redirect}#{urlencode(fragment, quote_via=quote)}"


def success_location(redirect: str, session: Session) -> str:
    fragment = session.model_dump(mode="json", by_alias=True)
    return f"{redirect}#{urlencode(fragment, quote_via=quote)}"


# --- the browser binding: the callback must come from the browser that started the login ---


def binding_cookie(config: Config, state_hash: str) -> tuple[str, str, bool]:
    """(name, path, secure) of the cookie /start sets and /callback requires. Over https it is a
    __Host- cookie, which sibling hosts (deployed projects) cannot set."""
    secure = config.settings.public_url.startswith("https://")
    name = f"svc_login_{state_hash[:24]}"
    return (f"__Host-{name}", "/", True) if secure else (name, "/v1/auth/", False)
