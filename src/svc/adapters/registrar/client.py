"""The registrar port (port.py) over the fake registrar's HTTP API (fake.py). Every call is bounded
(timeout_seconds): a registrar that does not answer is a RegistrarError, never a hung request. The
registrar's answers become the port's exceptions; what this client says never holds the API key."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import quote

import httpx

from svc.adapters.registrar.port import (
    Contact,
    NameUnavailable,
    NotInAccount,
    PaymentDeclined,
    Quote,
    RegistrarError,
    RegistrarRejected,
    Registration,
)


class NotItsAPI(Exception):
    """An answer that is not the registrar's API (not JSON, or not the shape it promises)."""


class RegistrarClient:
    name = "fake"

    def __init__(self, base_url: str, api_key: str, timeout_seconds: float = 15.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.description = f"the fake registrar at {self.base_url}"
        self.timeout_seconds = timeout_seconds
        self._api_key = api_key
        self._http = httpx.AsyncClient(base_url=self.base_url, timeout=timeout_seconds, trust_env=False,
                                       headers={"authorization": f"Bearer {api_key}"})

    # --- the port ---

    async def check(self, names: list[str]) -> list[Quote]:
        answer = await self._call("POST", "/v1/check", {"names": list(names)})
        try:
            results = answer["results"]
            if not isinstance(results, list) or len(results) != len(names):
                raise NotItsAPI
            return [Quote(name=_str(item["name"]), available=_bool(item["available"]),
                          price_cents=_cents(item["priceCents"]), renewal_cents=_cents(item["renewalCents"]))
                    for item in results]
        except (KeyError, TypeError, NotItsAPI):
            raise self._garbled() from None

    async def tlds(self) -> list[str]:
        answer = await self._call("GET", "/v1/tlds")
        tlds = answer.get("tlds")
        if not isinstance(tlds, list):
            raise self._garbled()
        try:
            return [_str(tld).lower() for tld in tlds]
        except NotItsAPI:
            raise self._garbled() from None

    async def set_ds(self, name: str, ds: list[str]) -> list[str]:
        answer = await self._call("PUT", f"/v1/domains/{_part(name)}/ds", {"ds": list(ds)}, domain_call=True)
        held = answer.get("ds")
        if not isinstance(held, list):
            raise self._garbled()
        try:
            return [_str(record) for record in held]
        except NotItsAPI:
            raise self._garbled() from None

    async def charge(self, *, name: str, years: int, amount_cents: int, key: str) -> str:
        answer = await self._call("POST", "/v1/charges", {"name": name, "years": years, "amountCents": amount_cents,
                                                          "idempotencyKey": key})
        return self._field(answer, "id")

    async def refund(self, charge_id: str) -> None:
        answer = await self._call("POST", f"/v1/charges/{_part(charge_id)}/refund")
        if answer.get("status") != "refunded":
            raise self._garbled()

    async def register(self, *, name: str, years: int, contact: Contact, charge_id: str) -> Registration:
        body = {"name": name, "years": years, "chargeId": charge_id, "contact": {
            "name": contact.name, "email": contact.email, "phone": contact.phone, "street": contact.street,
            "city": contact.city, "postalCode": contact.postal_code, "country": contact.country}}
        return self._registration(await self._call("POST", "/v1/domains", body))

    async def set_nameservers(self, name: str, nameservers: list[str]) -> Registration:
        return await self._domain_call("PUT", name, "/nameservers", {"nameservers": list(nameservers)})

    async def domain(self, name: str) -> Registration:
        return await self._domain_call("GET", name, "")

    async def renew(self, name: str, *, years: int, key: str) -> Registration:
        return await self._domain_call("POST", name, "/renew", {"years": years, "idempotencyKey": key})

    async def set_lock(self, name: str, locked: bool) -> Registration:
        return await self._domain_call("PUT", name, "/lock", {"locked": locked})

    async def set_auto_renew(self, name: str, enabled: bool) -> Registration:
        return await self._domain_call("PUT", name, "/auto-renew", {"enabled": enabled})

    async def auth_code(self, name: str) -> str:
        answer = await self._call("POST", f"/v1/domains/{_part(name)}/auth-code", domain_call=True)
        return self._field(answer, "code")

    async def aclose(self) -> None:
        await self._http.aclose()

    # --- speaking HTTP ---

    async def _domain_call(self, method: str, name: str, tail: str,
                           body: dict[str, Any] | None = None) -> Registration:
        return self._registration(await self._call(method, f"/v1/domains/{_part(name)}{tail}", body,
                                                   domain_call=True))

    async def _call(self, method: str, path: str, body: dict[str, Any] | None = None, *,
                    domain_call: bool = False) -> dict[str, Any]:
        """The answer's JSON object, or the port's exception for what the registrar said."""
        try:
            answer = await self._http.request(method, path, json=body)
        except httpx.TimeoutException:
            raise RegistrarError(f"{self.description} did not answer within {self.timeout_seconds:g} s") from None
        except httpx.HTTPError as exc:
            raise RegistrarError(f"{self.description} could not be reached ({type(exc).__name__})") from None
        try:
            data = answer.json()
        except ValueError:
            data = None
        status = answer.status_code
        if 200 <= status < 300:
            if not isinstance(data, dict):
                raise self._garbled()
            return data
        error = data.get("error") if isinstance(data, dict) else None
        if not isinstance(error, dict) or not isinstance(error.get("code"), str):
            if status >= 500:
                raise RegistrarError(f"{self.description} answered {status}")
            raise self._garbled()
        code = error["code"]
        message = self._scrub(str(error.get("message") or code)[:300])
        field = error.get("field") if isinstance(error.get("field"), str) else None
        if status >= 500 or status == 429:
            raise RegistrarError(f"{self.description} answered {status}: {message}")
        if status in (401, 403):
            raise RegistrarError(f"{self.description} refused svc's API key ({status}): {message}")
        if status == 402:
            raise PaymentDeclined(message)
        if status == 409 and code == "unavailable":
            raise NameUnavailable(message)
        if status == 404 and code == "not_found" and domain_call:
            raise NotInAccount(message)
        raise RegistrarRejected(message, field)

    # --- reading answers ---

    def _registration(self, data: dict[str, Any]) -> Registration:
        try:
            expires = datetime.fromisoformat(_str(data["expiresAt"]).replace("Z", "+00:00"))
            nameservers = data["nameservers"]
            if expires.tzinfo is None or not isinstance(nameservers, list):
                raise NotItsAPI
            return Registration(name=_str(data["name"]), expires_at=expires, locked=_bool(data["locked"]),
                                auto_renew=_bool(data["autoRenew"]),
                                nameservers=tuple(_str(host) for host in nameservers))
        except (KeyError, TypeError, ValueError, NotItsAPI):
            raise self._garbled() from None

    def _field(self, data: dict[str, Any], key: str) -> str:
        value = data.get(key)
        if not isinstance(value, str) or not value:
            raise self._garbled()
        return value

    def _garbled(self) -> RegistrarError:
        return RegistrarError(f"{self.description} answered something that is not its API")

    def _scrub(self, text: str) -> str:
        """The registrar's words, without the key should it echo it."""
        return text.replace(self._api_key, "[the API key]") if self._api_key else text


def _part(value: str) -> str:
    """A name or an id as one segment of a path."""
    return quote(value, safe="")


def _str(value: object) -> str:
    if not isinstance(value, str):
        raise NotItsAPI
    return value


def _bool(value: object) -> bool:
    if not isinstance(value, bool):
        raise NotItsAPI
    return value


def _cents(value: object) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise NotItsAPI
    return value
