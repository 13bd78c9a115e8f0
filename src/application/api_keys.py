"""Use cases of API keys: create (the key is shown once), list, revoke, and authenticate."""

from __future__ import annotations

import secrets
import uuid
from datetime import datetime

import attrs

from fourcorner.application.access import Principal, authorise, key_role
from fourcorner.application.collections import API_KEYS
from fourcorner.application.context import Context
from fourcorner.application.repositories import ApiKeys
from fourcorner.application.scoped import InOrg, owned
from fourcorner.application.storage import UnitOfWork
from fourcorner.domain import api_key
from fourcorner.domain.api_key import KEY_PREFIX, ApiKey
from fourcorner.domain.errors import Unauthorised
from fourcorner.domain.organisation import UserRef
from fourcorner.domain.roles import Role


@attrs.frozen
class CreateApiKey:
    name: str
    expires: datetime
    role: Role
    description: str = ""
    is_active: bool = True


@attrs.frozen
class NewKey:
    record: ApiKey
    key: str


async def create(
    ctx: Context, principal: Principal, org_id: uuid.UUID, cmd: CreateApiKey
) -> NewKey:
    """A person makes a key (SPEC: an orgadmin creates them), never a key: a key made with a
    key would be its creator's, not bounded by the first key's expiry nor ended with it."""
    user = principal.require_user()
    now = ctx.clock()
    async with ctx.uow() as uow:
        access = await authorise(uow, principal, org_id, Role.ORGADMIN, lock=True)
        api_key.check_new_key(cmd.role, access.role, cmd.expires, now)
        key = KEY_PREFIX + secrets.token_urlsafe(32)
        record = ApiKey(
            id=ctx.new_id(),
            org_id=org_id,
            name=cmd.name,
            description=cmd.description,
            expires=cmd.expires,
            is_active=cmd.is_active,
            role=cmd.role,
            key_hash=api_key.hash_key(key),
            prefix=api_key.prefix_of(key),
            created_at=now,
            created_by=UserRef(user.id),
            last_modified_at=now,
        )
        await uow.repository(API_KEYS).add(record)
        await uow.commit()
    return NewKey(record, key)


list_keys = InOrg(API_KEYS, "API key").list


async def revoke(
    ctx: Context, principal: Principal, org_id: uuid.UUID, key_id: uuid.UUID
) -> ApiKey:
    async with ctx.uow() as uow:
        await authorise(uow, principal, org_id, Role.ORGADMIN, lock=True)
        record: ApiKey = await owned(uow, API_KEYS, org_id, key_id, "API key")
        await uow.repository(API_KEYS).remove(key_id)
        await uow.commit()
    return record


async def end_with_membership(
    uow: UnitOfWork, org_id: uuid.UUID, user_id: str, at: datetime
) -> None:
    """Make the keys ``user_id`` created in ``org_id`` inactive for good, in the unit of work
    that ends their membership (``domain.api_key.ended_with_membership``)."""
    keys = ApiKeys(uow)
    await keys.update_many(api_key.ended_with_membership(await keys.of_org(org_id), user_id, at))


async def authenticate(ctx: Context, presented: str) -> Principal:
    """The principal of an ``X-Api-Key``: active, unexpired, and its creator still a user and
    an active member of its organisation (or a superadmin). What it may do there is checked
    again by ``authorise`` on each use (``access.key_role``)."""
    if not presented.startswith(KEY_PREFIX) or len(presented) > 200 or not presented.isascii():
        raise Unauthorised(reason="the API key is not valid")
    async with ctx.reads() as uow:
        record = await ApiKeys(uow).by_hash(api_key.hash_key(presented))
        if record is None or not record.usable_at(ctx.clock()):
            raise Unauthorised(reason="the API key is not valid, inactive or expired")
        if await key_role(uow, record) is None:
            raise Unauthorised(
                reason="the API key's creator is no longer a user or a member of its organisation"
            )
    return Principal(key=record)
