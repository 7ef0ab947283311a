"""The hostname settings: the fallback origin, the resolver address and which resolver is asked."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from svc.adapters.resolver import build_resolver
from svc.adapters.resolver.settings import ResolverSettings
from svc.domains.hostnames.settings import HostnameSettings
from svc.settings import Settings
from tests.support.config import configured


def test_fallback_origin_default_and_form() -> None:
    assert HostnameSettings().fallback_origin_name("apps.example.net") == "edge.apps.example.net."
    given = HostnameSettings(fallback_origin="Edge.Example.NET")
    assert given.fallback_origin_name("apps.example.net") == "edge.example.net."
    with pytest.raises(ValidationError, match="fallback origin must be a host name"):
        configured(Settings(), fallback_origin="edge svc")


def test_resolver_address_and_choice() -> None:
    assert ResolverSettings(dns_resolver="127.0.0.1:5353").dns_resolver_address == ("127.0.0.1", 5353)
    assert ResolverSettings(dns_resolver="[::1]").dns_resolver_address == ("::1", 53)
    assert ResolverSettings(dns_resolver="192.0.2.53").dns_resolver_address == ("192.0.2.53", 53)
    for bad in ("resolver.example:53", "127.0.0.1:0", "127.0.0.1:x"):
        with pytest.raises(ValidationError):
            configured(Settings(), dns_resolver=bad)
    # Set: that one. Unset: the system's, standing for the public DNS; svc's own PowerDNS only when
    # its zones are trusted (a local run), and only when svc runs one.
    assert build_resolver(configured(Settings(), dns_resolver="192.0.2.53:5300"), managed_dns=True).description == (
        "the resolver at 192.0.2.53:5300")
    untrusting = configured(Settings(), dns_host="0.0.0.0", dns_port=5354)
    assert build_resolver(untrusting, managed_dns=True).description.startswith("the system resolver")
    trusting = configured(Settings(), dns_host="0.0.0.0", dns_port=5354, trust_own_zones=True)
    assert build_resolver(trusting, managed_dns=True).description == "the resolver at 127.0.0.1:5354"
    assert build_resolver(trusting, managed_dns=False).description.startswith("the system resolver")
    assert build_resolver(configured(Settings()), managed_dns=False).description.startswith("the system resolver")
