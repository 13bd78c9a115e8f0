"""The caller checked again where a change is written (``authorised_still``): their standing is
read again, with ``authorise``'s errors; the organisation, which ``authorise`` found before and
which is never removed, is not."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from fourcorner.adapters.memory.storage import InMemoryStorage
from fourcorner.application.access import Principal, authorise, authorised_still
from fourcorner.application.collections import MEMBERS
from fourcorner.domain.errors import NotAMember, NotFound, RoleNotPermitted
from fourcorner.domain.member import Member, MemberStatus
from fourcorner.domain.organisation import UserRef
from fourcorner.domain.roles import Role
from fourcorner.domain.user import User

T0 = datetime(2026, 1, 2, tzinfo=UTC)
ORG = uuid.UUID(int=1)


def user(uid: str, role: Role = Role.USER) -> User:
    me = UserRef(uid)
    return User(uid, f"{uid}@example.com", T0, me, T0, me, role=role)


def member(uid: str, role: Role) -> Member:
    return Member(uuid.uuid4(), ORG, uid, role, MemberStatus.ACTIVE, T0, UserRef(uid), T0)


async def test_a_member_passes_until_removed_then_is_told_what_authorise_tells() -> None:
    storage = InMemoryStorage()
    alice = Principal(user=user("alice"))
    async with storage.unit_of_work() as uow:
        await uow.repository(MEMBERS).add(joined := member("alice", Role.ORGMEMBER))
        await uow.commit()
    async with storage.unit_of_work() as uow:
        await authorised_still(uow, alice, ORG, Role.ORGMEMBER)
        with pytest.raises(RoleNotPermitted):
            await authorised_still(uow, alice, ORG, Role.ORGADMIN)
        await uow.repository(MEMBERS).remove(joined.id)
        with pytest.raises(NotAMember):
            await authorised_still(uow, alice, ORG, Role.ORGMEMBER)
        with pytest.raises(NotAMember):  # the same answer
            await authorise(uow, alice, ORG, Role.ORGMEMBER)


async def test_the_organisation_is_not_read_again() -> None:
    """A superadmin's check reads nothing (``authorise`` found the organisation before);
    ``authorise`` itself still tells a missing one."""
    root = Principal(user=user("root", Role.SUPERADMIN))
    async with InMemoryStorage().unit_of_work() as uow:
        await authorised_still(uow, root, ORG, Role.ORGADMIN)
        with pytest.raises(NotFound):
            await authorise(uow, root, ORG, Role.ORGADMIN)
