"""Creating an API key (``application.api_keys.create``) takes a person: the use case refuses
an API key itself, not only the route (``user_only``), so no key mints another that would
outlive it."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from fourcorner.adapters.memory import InMemoryStorage
from fourcorner.application import api_keys
from fourcorner.application.access import Principal
from fourcorner.application.collections import API_KEYS, MEMBERS, ORGANISATIONS, USERS
from fourcorner.application.context import Context
from fourcorner.domain.api_key import ApiKey
from fourcorner.domain.errors import Forbidden
from fourcorner.domain.member import Member, MemberStatus
from fourcorner.domain.organisation import UserRef
from fourcorner.domain.roles import Role
from fourcorner.domain.user import User
from records import context, organisation

NOW = datetime(2026, 1, 2, 10, 0, tzinfo=UTC)
ORG = uuid.UUID(int=7)


async def setting() -> tuple[Context, InMemoryStorage, User, ApiKey]:
    """Alice, orgadmin of ``ORG``, and her orgadmin key, usable for an hour."""
    storage = InMemoryStorage()
    ctx = context(storage, lambda: NOW)
    alice = User("alice", "alice@example.com", NOW, UserRef("alice"), NOW, UserRef("alice"))
    key = ApiKey(
        uuid.uuid4(), ORG, "ci", "", NOW + timedelta(hours=1), True, Role.ORGADMIN,
        "hash", "fck_abc", NOW, UserRef("alice"), NOW,
    )  # fmt: skip
    membership = Member(
        uuid.uuid4(), ORG, "alice", Role.ORGADMIN, MemberStatus.ACTIVE, NOW, UserRef("alice"), NOW
    )
    async with storage.unit_of_work() as uow:
        await uow.repository(ORGANISATIONS).add(organisation(ORG, by="alice"))
        await uow.repository(USERS).add(alice)
        await uow.repository(MEMBERS).add(membership)
        await uow.repository(API_KEYS).add(key)
        await uow.commit()
    return ctx, storage, alice, key


def command(role: Role = Role.ORGADMIN) -> api_keys.CreateApiKey:
    return api_keys.CreateApiKey("minted", NOW + timedelta(days=3650), role)


@pytest.mark.parametrize("role", [Role.ORGADMIN, Role.ORGMEMBER])
async def test_an_api_key_never_creates_a_key(role: Role) -> None:
    ctx, storage, _, key = await setting()
    with pytest.raises(Forbidden):
        await api_keys.create(ctx, Principal(key=key), ORG, command(role))
    async with storage.reader() as uow:
        assert [k.id for k in await uow.repository(API_KEYS).all()] == [key.id]


async def test_a_users_token_creates_a_key_that_is_theirs() -> None:
    ctx, _, alice, _ = await setting()
    made = await api_keys.create(ctx, Principal(user=alice), ORG, command())
    assert made.record.created_by == UserRef("alice") and made.key.startswith("fck_")
