"""Records that belong to one organisation: fetch one (404 outside it) and list them.

``get_in_org`` and ``list_in_org`` change nothing, so they read through ``Context.reads()``:
the caller's membership comes from the record cache. ``InOrg`` binds them to one collection,
for the use-case modules whose readers are no more than that."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, Generic, TypeVar

import attrs

from fourcorner.application.access import Principal, authorise
from fourcorner.application.context import Context
from fourcorner.application.listing import ListRequest, build_query, equals
from fourcorner.application.storage import Collection, Page, UnitOfWork
from fourcorner.domain.errors import NotFound
from fourcorner.domain.filtering import Condition
from fourcorner.domain.roles import Role

T = TypeVar("T")


async def owned(
    uow: UnitOfWork,
    collection: Collection[T],
    org_id: uuid.UUID,
    ident: object,
    resource: str,
    *,
    lock: bool = False,
) -> T:
    """The record ``ident`` of ``org_id``; another organisation's record is not found.
    ``lock``: held until the unit of work ends, for a change made of what was read."""
    repository = uow.repository(collection)
    found: Any = await (repository.lock(ident) if lock else repository.get(ident))
    if found is None or found.org_id != org_id:
        raise NotFound(resource=resource, ident=str(ident))
    result: T = found
    return result


async def owned_many(
    uow: UnitOfWork,
    collection: Collection[T],
    org_id: uuid.UUID,
    idents: Sequence[uuid.UUID],
    resource: str,
) -> dict[uuid.UUID, T]:
    """The records ``idents`` of ``org_id`` by id, each held until the unit of work ends. They
    are taken in id order (``lock_many``), whatever order the caller named them in: two
    batches over the same records in other orders wait for each other instead of
    deadlocking. The first id (in the caller's order) that names no record of ``org_id`` is
    not found: a record a concurrent unit of work removed is gone once its lock is let go."""
    held: list[Any] = await uow.repository(collection).lock_many(list(dict.fromkeys(idents)))
    found = {record.id: record for record in held if record.org_id == org_id}
    missing = next((ident for ident in idents if ident not in found), None)
    if missing is not None:
        raise NotFound(resource=resource, ident=str(missing))
    result: dict[uuid.UUID, T] = found
    return result


async def remove_owned(
    uow: UnitOfWork, collection: Collection[Any], ident: object, resource: str
) -> None:
    """Remove the record ``ident`` that ``owned`` found in this unit of work; not found when
    a concurrent unit of work removed it meanwhile: of concurrent deletes of one record, the
    one whose removal found it answers for it."""
    if not await uow.repository(collection).remove(ident):
        raise NotFound(resource=resource, ident=str(ident))


async def get_in_org(
    ctx: Context,
    principal: Principal,
    org_id: uuid.UUID,
    collection: Collection[T],
    ident: object,
    resource: str,
    role: Role = Role.ORGADMIN,
) -> T:
    """The record ``ident`` of ``org_id``, for a caller holding ``role`` there."""
    async with ctx.reads() as uow:
        await authorise(uow, principal, org_id, role)
        return await owned(uow, collection, org_id, ident, resource)


async def list_in_org(
    ctx: Context,
    principal: Principal,
    org_id: uuid.UUID,
    collection: Collection[T],
    request: ListRequest,
    role: Role = Role.ORGADMIN,
    scope: tuple[Condition, ...] = (),
) -> Page[T]:
    """A page of ``org_id``'s records of ``collection`` (within ``scope`` too), for a caller
    holding ``role`` there."""
    within = (equals(collection, "orgId", org_id), *scope)
    query = build_query(collection, request, scope=within)
    async with ctx.reads() as uow:
        await authorise(uow, principal, org_id, role)
        return await uow.repository(collection).list(query)


@attrs.frozen
class InOrg(Generic[T]):
    """The readers of one collection's records of an organisation, for a caller holding
    ``role`` there; ``resource`` is what a record not found is called. A use-case module
    names them: ``get = InOrg(WEBHOOKS, "webhook").get``."""

    collection: Collection[T]
    resource: str
    role: Role = Role.ORGADMIN

    async def get(
        self, ctx: Context, principal: Principal, org_id: uuid.UUID, ident: uuid.UUID
    ) -> T:
        """The record ``ident`` of ``org_id``."""
        return await get_in_org(
            ctx, principal, org_id, self.collection, ident, self.resource, self.role
        )

    async def list(
        self, ctx: Context, principal: Principal, org_id: uuid.UUID, request: ListRequest
    ) -> Page[T]:
        """A page of ``org_id``'s records."""
        return await list_in_org(ctx, principal, org_id, self.collection, request, self.role)
