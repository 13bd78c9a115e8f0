"""Granting a person access to an organisation (``application.members``: making a member,
inviting an address, approving, changing a role) takes a person: the use cases refuse an API
key themselves, not only the routes (``user_only``), so no one a key made an orgadmin keeps
that once the key is revoked or expires. Rejecting and removing, which grant nothing, a key
may still do."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from fourcorner.adapters.memory import InMemoryStorage
from fourcorner.application import members
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


def _user(uid: str) -> User:
    return User(uid, f"{uid}@example.com", NOW, UserRef(uid), NOW, UserRef(uid))


def _member(uid: str, role: Role, status: MemberStatus) -> Member:
    return Member(uuid.uuid4(), ORG, uid, role, status, NOW, UserRef(uid), NOW)


async def setting() -> tuple[Context, InMemoryStorage, User, ApiKey, Member, Member]:
    """Alice, orgadmin of ``ORG``, her orgadmin key, Carol an orgmember, Dave pending."""
    storage = InMemoryStorage()
    ctx = context(storage, lambda: NOW)
    alice = _user("alice")
    key = ApiKey(
        uuid.uuid4(), ORG, "ci", "", NOW + timedelta(hours=1), True, Role.ORGADMIN,
        "hash", "fck_abc", NOW, UserRef("alice"), NOW,
    )  # fmt: skip
    carol = _member("carol", Role.ORGMEMBER, MemberStatus.ACTIVE)
    dave = _member("dave", Role.ORGMEMBER, MemberStatus.PENDING)
    async with storage.unit_of_work() as uow:
        await uow.repository(ORGANISATIONS).add(organisation(ORG, by="alice"))
        for user in (alice, _user("carol"), _user("dave"), _user("erin")):
            await uow.repository(USERS).add(user)
        await uow.repository(MEMBERS).add(_member("alice", Role.ORGADMIN, MemberStatus.ACTIVE))
        await uow.repository(MEMBERS).add(carol)
        await uow.repository(MEMBERS).add(dave)
        await uow.repository(API_KEYS).add(key)
        await uow.commit()
    return ctx, storage, alice, key, carol, dave


async def _members(storage: InMemoryStorage) -> set[tuple[str, str, Role, MemberStatus]]:
    async with storage.reader() as uow:
        found = await uow.repository(MEMBERS).all()
    return {(m.user_ref, m.email, m.role, m.status) for m in found}


@pytest.mark.parametrize(
    "grant",
    [
        "add a user",
        "invite an address",
        "approve",
        "promote",
    ],
)
async def test_an_api_key_never_grants_access(grant: str) -> None:
    ctx, storage, _, key, carol, dave = await setting()
    before = await _members(storage)
    caller = Principal(key=key)
    with pytest.raises(Forbidden):
        match grant:
            case "add a user":
                cmd = members.CreateMember(user_id="erin", role=Role.ORGADMIN)
                await members.create(ctx, caller, ORG, cmd)
            case "invite an address":
                cmd = members.CreateMember(email="eve@example.com", role=Role.ORGADMIN)
                await members.create(ctx, caller, ORG, cmd)
            case "approve":
                await members.decide(ctx, caller, ORG, [dave.id], approve=True)
            case "promote":
                await members.update(
                    ctx, caller, ORG, carol.id, members.UpdateMember(Role.ORGADMIN)
                )
    assert await _members(storage) == before


async def test_an_api_key_still_rejects_and_removes() -> None:
    ctx, storage, _, key, carol, dave = await setting()
    caller = Principal(key=key)
    [rejected] = await members.decide(ctx, caller, ORG, [dave.id], approve=False)
    assert rejected.status is MemberStatus.REJECTED
    removed = await members.delete(ctx, caller, ORG, carol.id)
    assert removed.id == carol.id
    assert {m[0] for m in await _members(storage)} == {"alice", "dave"}


async def test_a_users_token_grants_access() -> None:
    ctx, storage, alice, _, carol, dave = await setting()
    caller = Principal(user=alice)
    await members.create(ctx, caller, ORG, members.CreateMember(user_id="erin"))
    await members.create(ctx, caller, ORG, members.CreateMember(email="eve@example.com"))
    await members.decide(ctx, caller, ORG, [dave.id], approve=True)
    await members.update(ctx, caller, ORG, carol.id, members.UpdateMember(Role.ORGADMIN))
    assert await _members(storage) == {
        ("alice", "", Role.ORGADMIN, MemberStatus.ACTIVE),
        ("carol", "", Role.ORGADMIN, MemberStatus.ACTIVE),
        ("dave", "", Role.ORGMEMBER, MemberStatus.ACTIVE),
        ("erin", "erin@example.com", Role.ORGMEMBER, MemberStatus.ACTIVE),
        ("", "eve@example.com", Role.ORGMEMBER, MemberStatus.INVITED),
    }
