"""HTTP only: DNS zones of an org, their record sets and DNSSEC."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path, Response

from svc.auth.roles import AdminAccess, MemberAccess, ViewerAccess
from svc.deps import Uow, api_router
from svc.domains.dns import schemas, service
from svc.uow import runs

# Every DNS route may answer 503 dns_not_configured (the document lists 400-409 for every route).
router = api_router(tags=["dns"], responses={503: {
    "description": "DNS is turned off in this deployment (dns_not_configured)",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}})

_ZONES = "/v1/orgs/{orgSlug}/dns/zones"
_ZONE = _ZONES + "/{zone}"
_RRSET = _ZONE + "/rrsets/{name}/{type}"

# The zone's shape, stated for clients as the `idn-hostname` format: records.zone_name decides (400).
ZonePath = Annotated[str, Path(alias="zone", max_length=300, json_schema_extra={"format": "idn-hostname"},
                               description="The zone's name, such as example.com")]
NamePath = Annotated[str, Path(alias="name", max_length=300,
                               description='Relative to the zone ("www", "_sip._tcp"); "@" is the apex')]
TypePath = Annotated[str, Path(alias="type", max_length=10, description="A, AAAA, MX, SRV, CAA, CNAME, TXT or NS")]


@router.get(_ZONES, response_model=schemas.ZoneList, operation_id="listZones")
async def list_zones(access: ViewerAccess, uow: Uow) -> schemas.ZoneList:
    return await service.list_zones(uow, access)


@router.post(_ZONES, response_model=schemas.ZoneDetail, operation_id="createZone")
@runs(service.create_zone)
async def create_zone(access: AdminAccess, body: schemas.ZoneCreate, uow: Uow) -> schemas.ZoneDetail:
    return await service.create_zone(uow, access, body.name)


@router.post(_ZONE + "/delegation", response_model=schemas.Zone, operation_id="checkZoneDelegation",
             summary="Ask the public DNS now whether it delegates the zone to svc's nameservers")
@runs(service.check_delegation)
async def check_delegation(zone: ZonePath, access: MemberAccess, uow: Uow) -> schemas.Zone:
    return await service.check_delegation(uow, access, zone)


@router.get(_ZONE, response_model=schemas.ZoneDetail, operation_id="getZone")
async def get_zone(zone: ZonePath, access: ViewerAccess, uow: Uow) -> schemas.ZoneDetail:
    return await service.zone_detail(uow, access, zone)


@router.delete(_ZONE, status_code=204, response_class=Response, operation_id="deleteZone")
async def delete_zone(zone: ZonePath, access: AdminAccess, uow: Uow) -> Response:
    await service.delete_zone(uow, access, zone)
    return Response(status_code=204)


@router.put(_RRSET, response_model=schemas.RRset, operation_id="setRRset")
async def set_rrset(zone: ZonePath, name: NamePath, type_: TypePath, access: MemberAccess,
                    body: schemas.RRsetPut, uow: Uow) -> schemas.RRset:
    return await service.put_rrset(uow, access, zone, name, type_, body)


@router.delete(_RRSET, status_code=204, response_class=Response, operation_id="deleteRRset")
async def delete_rrset(zone: ZonePath, name: NamePath, type_: TypePath, access: MemberAccess,
                       uow: Uow) -> Response:
    await service.delete_rrset(uow, access, zone, name, type_)
    return Response(status_code=204)


@router.post(_ZONE + "/dnssec", response_model=schemas.Zone, operation_id="setDnssec")
async def set_dnssec(zone: ZonePath, access: AdminAccess, body: schemas.DnssecSet, uow: Uow) -> schemas.Zone:
    return await service.set_dnssec(uow, access, zone, body.enabled)


@router.put(_ZONE + "/dnssec/ds", response_model=schemas.Zone, operation_id="setDs")
async def set_ds(zone: ZonePath, access: AdminAccess, body: schemas.DsSet, uow: Uow) -> schemas.Zone:
    return await service.set_ds(uow, access, zone, list(body.ds))
