"""The typed repositories (``application.repositories``) over every storage adapter: each named
finder finds what its name says, in a unit of work and in a reader, and the generic operations
pass through to the store."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import attrs

from fourcorner.application.repositories import ApiKeys, Members, Organisations
from fourcorner.domain.member import MemberStatus
from fourcorner.domain.organisation import UserRef

from .test_storage import ORG_A, ORG_B, api_key, member, org

if TYPE_CHECKING:
    from conftest import StorageUnderTest


async def test_members_are_found_by_user_organisation_and_status(
    store: StorageUnderTest,
) -> None:
    ann_a = member(ORG_A, "ann")
    ann_b = member(ORG_B, "ann", status=MemberStatus.PENDING)
    bob_a = member(ORG_A, "bob")
    async with store.unit_of_work() as uow:
        members = Members(uow)
        for m in (ann_a, ann_b, bob_a):
            await members.add(m)
        await uow.commit()
    for reads in (store.unit_of_work, store.storage.reader):
        async with reads() as uow:
            members = Members(uow)
            assert {m.id for m in await members.of_user("ann")} == {ann_a.id, ann_b.id}
            assert [m.id for m in await members.active_of_user("ann")] == [ann_a.id]
            assert (await members.of_user_in(ORG_B, "ann")) == ann_b
            assert await members.active_of_user_in(ORG_B, "ann") is None
            assert await members.active_of_user_in(ORG_A, "bob") == bob_a
            assert await members.of_user_in(ORG_B, "bob") is None
            assert {m.id for m in await members.of_org(ORG_A)} == {ann_a.id, bob_a.id}
            assert await members.of_user("cid") == []


async def test_organisations_by_legal_key_and_creator(store: StorageUnderTest) -> None:
    acme = org("111", created_by=UserRef("ann"))
    globex = org("222", created_by=UserRef("ann"))
    async with store.unit_of_work() as uow:
        orgs = Organisations(uow)
        await orgs.add(acme)
        await orgs.add(globex)
        await uow.commit()
    async with store.unit_of_work() as uow:
        orgs = Organisations(uow)
        assert await orgs.by_legal_key("0208:222") == globex
        assert await orgs.by_legal_key("0208:333") is None
        assert await orgs.count_created_by("ann") == 2
        assert await orgs.count_created_by("bob") == 0


async def test_the_generic_operations_pass_through(store: StorageUnderTest) -> None:
    key = api_key("h-1")
    async with store.unit_of_work() as uow:
        keys = ApiKeys(uow)
        await keys.add(key)
        await uow.commit()
    renamed = attrs.evolve(key, name="renamed")
    async with store.unit_of_work() as uow:
        keys = ApiKeys(uow)
        assert await keys.lock(key.id) == key
        await keys.update(renamed)
        await uow.commit()
    async with store.unit_of_work() as uow:
        keys = ApiKeys(uow)
        assert await keys.by_hash("h-1") == renamed
        assert await keys.get(key.id) == renamed
        assert await keys.remove(key.id)
        assert not await keys.remove(uuid.uuid4())
        await uow.commit()
    async with store.storage.reader() as uow:
        assert await ApiKeys(uow).by_hash("h-1") is None
