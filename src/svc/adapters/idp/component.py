"""The identity provider people sign in with (GitHub, any OIDC provider) as a component."""

from __future__ import annotations

from svc.adapters.idp import build_identity_provider
from svc.adapters.idp.settings import IdpSettings
from svc.supervisor.component import Component

COMPONENT = Component(name="idp", settings=IdpSettings, slot="idp", build=build_identity_provider)
