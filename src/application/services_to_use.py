"""Which SMPs and access points an organisation may use (spec section 1): the operator's of
the environments its mode allows, and in whitelabel mode also its own."""

from __future__ import annotations

import uuid

from fourcorner.application.access import Principal, authorise
from fourcorner.application.collections import ACCESS_POINTS, SMPS
from fourcorner.application.context import Context
from fourcorner.application.listing import ListRequest, build_query, select
from fourcorner.application.repositories import AccessPoints, Smps
from fourcorner.application.storage import Page, UnitOfWork
from fourcorner.domain.network_services import OPERATOR_ORG_ID, AccessPoint, Smp, all_to_use
from fourcorner.domain.organisation import Mode, Organisation
from fourcorner.domain.roles import Role

_FIRST_PAGE = ListRequest()  # the first page (100), in the order they were made


async def usable(uow: UnitOfWork, org: Organisation) -> tuple[list[Smp], list[AccessPoint]]:
    smps, aps = Smps(uow), AccessPoints(uow)
    operator_smps = await smps.of_org(OPERATOR_ORG_ID)
    operator_aps = await aps.of_org(OPERATOR_ORG_ID)
    own_smps = await smps.of_org(org.id) if org.organisation_mode is Mode.WHITELABEL else []
    own_aps = await aps.of_org(org.id) if org.organisation_mode is Mode.WHITELABEL else []
    return (
        all_to_use(org, operator_smps, own_smps),
        all_to_use(org, operator_aps, own_aps),
    )


async def smps_to_use(
    ctx: Context, principal: Principal, org_id: uuid.UUID, request: ListRequest = _FIRST_PAGE
) -> Page[Smp]:
    """A page of the SMPs ``org_id`` may use: a list like any other (``request``)."""
    query = build_query(SMPS, request, owner=org_id)
    async with ctx.uow() as uow:
        access = await authorise(uow, principal, org_id, Role.ORGMEMBER)
        return select(SMPS, (await usable(uow, access.org))[0], query)


async def aps_to_use(
    ctx: Context, principal: Principal, org_id: uuid.UUID, request: ListRequest = _FIRST_PAGE
) -> Page[AccessPoint]:
    """A page of the access points ``org_id`` may use: a list like any other (``request``)."""
    query = build_query(ACCESS_POINTS, request, owner=org_id)
    async with ctx.uow() as uow:
        access = await authorise(uow, principal, org_id, Role.ORGMEMBER)
        return select(ACCESS_POINTS, (await usable(uow, access.org))[1], query)
