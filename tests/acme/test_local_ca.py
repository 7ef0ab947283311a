"""svc's local CA (svc.adapters.acme.local) as a TLS client sees it: OpenSSL (Python's ssl) takes a
certificate it signs for a local name with the root trusted, and refuses one for a public name even
when the key signed it (the root's name constraints), so a stolen key impersonates no real site."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from svc.adapters.acme import local
from svc.adapters.acme.port import AcmeError, AcmeErrorKind, Method


class _NoSolver:
    async def publish(self, method: Method, name: str, token: str, value: str) -> None:
        raise AssertionError("the local CA publishes no challenge")

    async def withdraw(self, method: Method, name: str, token: str, value: str) -> None:
        raise AssertionError("the local CA publishes no challenge")


def _handshake(tmp: Path, root: Path, fullchain: str, key: str, host: str) -> None:
    """A TLS handshake in memory: a server with the chain, a client trusting `root` asking for `host`."""
    (tmp / "leaf.pem").write_text(fullchain)
    (tmp / "leaf.key").write_text(key)
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(tmp / "leaf.pem", tmp / "leaf.key")
    client_ctx = ssl.create_default_context(cafile=str(root))
    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    client = client_ctx.wrap_bio(c_in, c_out, server_hostname=host)
    server = server_ctx.wrap_bio(s_in, s_out, server_side=True)
    for _ in range(10):
        done = 0
        for side, outbox, peer_in in ((client, c_out, s_in), (server, s_out, c_in)):
            try:
                side.do_handshake()
                done += 1
            except ssl.SSLWantReadError:
                pass
            peer_in.write(outbox.read())
        if done == 2:
            return
    raise AssertionError("the handshake did not finish")


async def test_a_local_name_verifies_and_a_public_one_is_refused_by_the_constraints(tmp_path: Path) -> None:
    root = local.load_or_make(tmp_path / "data", "localhost")
    assert root == local.root_path(tmp_path / "data")
    ca = local.LocalCa(tmp_path / "data", "localhost")
    issued = await ca.issue(["web-ada.localhost"], Method.http01, _NoSolver())
    assert issued.issuer.startswith("svc local CA") and issued.names == ("web-ada.localhost",)
    _handshake(tmp_path, root, issued.fullchain_pem, issued.key_pem, "web-ada.localhost")
    shop = await ca.issue(["www.shop.test"], Method.http01, _NoSolver())
    _handshake(tmp_path, root, shop.fullchain_pem, shop.key_pem, "www.shop.test")

    # svc signs no public name ...
    with pytest.raises(AcmeError) as refused:
        await ca.issue(["www.example.com"], Method.http01, _NoSolver())
    assert refused.value.kind is AcmeErrorKind.rejected
    assert "signs names under localhost, test, example, invalid, internal, home.arpa, local only" in \
        refused.value.message
    # ... and one signed with its key anyway is refused by a client that trusts the root.
    forged = local._sign(local._load(tmp_path / "data", "localhost"), ["www.example.com"])
    with pytest.raises(ssl.SSLCertVerificationError, match="permitted subtree violation"):
        _handshake(tmp_path, root, forged.fullchain_pem, forged.key_pem, "www.example.com")


def test_the_root_is_made_once_and_an_app_domain_outside_the_reserved_names_joins_them(tmp_path: Path) -> None:
    first = local.load_or_make(tmp_path / "data", "apps.example.org").read_bytes()
    assert local.load_or_make(tmp_path / "data", "apps.example.org").read_bytes() == first
    assert local._load(tmp_path / "data", "ignored").permitted[-1] == "apps.example.org"
    assert local.permitted_names("svc.localhost") == local.RESERVED
