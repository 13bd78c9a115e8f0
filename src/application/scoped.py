"""Records that belong to one organisation: fetch one (404 outside it) and list them."""

from __future__ import annotations

import uuid
from typing import Any, TypeVar

from application.access import Principal, authorise
from application.context import Context
from application.listing import ListRequest, build_query, equals
from application.storage import Collection, Page, UnitOfWork
from domain.errors import NotFound
from domain.roles import Role

T = TypeVar("T")


async def owned(
    uow: UnitOfWork, collection: Collection[T], org_id: uuid.UUID, ident: object, resource: str
) -> T:
    """The record ``ident`` of ``org_id``; another organisation's record is not found."""
    found: Any = await uow.repository(collection).get(ident)
    if found is None or found.org_id != org_id:
        raise NotFound(resource=resource, ident=str(ident))
    result: T = found
    return result


async def list_in_org(
    ctx: Context,
    principal: Principal,
    org_id: uuid.UUID,
    collection: Collection[T],
    request: ListRequest,
    role: Role = Role.ORGADMIN,
) -> Page[T]:
    """A page of ``org_id``'s records of ``collection``, for a caller holding ``role`` there."""
    query = build_query(collection, request, scope=(equals(collection, "orgId", org_id),))
    async with ctx.uow() as uow:
        await authorise(uow, principal, org_id, role)
        return await uow.repository(collection).list(query)
