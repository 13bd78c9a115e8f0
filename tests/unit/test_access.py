"""The caller checked again where a change is written (``authorised_still``): their standing is
read again, with ``authorise``'s errors; the organisation, which ``authorise`` found before and
which is never removed, is not."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import attrs
import pytest

from fourcorner.adapters.memory.storage import InMemoryStorage
from fourcorner.application.access import Principal, authorise, authorised_still
from fourcorner.application.collections import API_KEYS, MEMBERS, USERS
from fourcorner.domain.api_key import ApiKey
from fourcorner.domain.errors import Forbidden, NotAMember, NotFound, RoleNotPermitted
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
        await authorised_still(uow, alice, ORG, Role.ORGMEMBER, T0)
        with pytest.raises(RoleNotPermitted):
            await authorised_still(uow, alice, ORG, Role.ORGADMIN, T0)
        await uow.repository(MEMBERS).remove(joined.id)
        with pytest.raises(NotAMember):
            await authorised_still(uow, alice, ORG, Role.ORGMEMBER, T0)
        with pytest.raises(NotAMember):  # the same answer
            await authorise(uow, alice, ORG, Role.ORGMEMBER)


async def test_the_organisation_is_not_read_again_but_a_superadmin_is() -> None:
    """A superadmin's check where the change is written reads the organisation not again
    (``authorise`` found it before), the user again: one deleted since is an unknown user;
    ``authorise`` itself still tells a missing organisation."""
    storage = InMemoryStorage()
    stored_root = user("root", Role.SUPERADMIN)
    root = Principal(user=stored_root)
    async with storage.unit_of_work() as uow:
        await uow.repository(USERS).add(stored_root)
        await uow.commit()
    async with storage.unit_of_work() as uow:
        await authorised_still(uow, root, ORG, Role.ORGADMIN, T0)
        with pytest.raises(NotFound) as no_org:
            await authorise(uow, root, ORG, Role.ORGADMIN)
        assert no_org.value.resource == "organisation"
        await uow.repository(USERS).remove(stored_root.id)
        with pytest.raises(NotFound) as gone:
            await authorised_still(uow, root, ORG, Role.ORGADMIN, T0)
        assert (gone.value.resource, gone.value.ident) == ("user", "root")
        with pytest.raises(NotFound) as gone:  # and where nothing is held
            await authorise(uow, root, ORG, Role.ORGADMIN)
        assert (gone.value.resource, gone.value.ident) == ("user", "root")


@pytest.mark.parametrize("end", ["revoked", "expired", "deleted"])
async def test_an_api_key_revoked_expired_or_deleted_since_the_request_began_is_refused(
    end: str,
) -> None:
    """The key itself is read again where the change is written, not only its creator's
    standing: one revoked (or expired, or deleted) while a large document was checked fails."""
    storage = InMemoryStorage()
    creator = UserRef("alice")
    key = ApiKey(
        uuid.uuid4(), ORG, "ci", "", T0 + timedelta(days=1), True, Role.ORGMEMBER,
        "hash", "fc_abc", T0, creator, T0,
    )  # fmt: skip
    async with storage.unit_of_work() as uow:
        await uow.repository(USERS).add(user("alice"))
        await uow.repository(MEMBERS).add(member("alice", Role.ORGADMIN))
        await uow.repository(API_KEYS).add(key)
        await uow.commit()
    caller = Principal(key=key)
    async with storage.unit_of_work() as uow:
        await authorised_still(uow, caller, ORG, Role.ORGMEMBER, T0)
        now = T0
        if end == "revoked":
            await uow.repository(API_KEYS).update(attrs.evolve(key, is_active=False))
        elif end == "expired":
            now = key.expires
        else:
            await uow.repository(API_KEYS).remove(key.id)
        with pytest.raises(Forbidden):
            await authorised_still(uow, caller, ORG, Role.ORGMEMBER, now)
