"""The SMP registration port: one contract for the in-memory and the built-in adapters."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from fourcorner.adapters.memory import InMemoryStorage
from fourcorner.adapters.memory.smp import InMemorySmpRegistrar
from fourcorner.adapters.smp.registrar import StoredSmpRegistrar
from fourcorner.domain.smp import Endpoint, ProcessEntry, ServiceEntry, SmpRegistration

NOW = datetime(2026, 1, 2, tzinfo=UTC)
SMP = uuid.UUID(int=7)


def reg(participant: str, docs: tuple[str, ...] = ("urn:doc::1",)) -> SmpRegistration:
    endpoint = Endpoint("peppol-transport-as4-v2_0", "https://ap.example/as4", "MIIB")
    services = tuple(
        ServiceEntry("busdox-docid-qns", d, (ProcessEntry("cenbii-procid-ubl", "p", (endpoint,)),))
        for d in docs
    )
    return SmpRegistration(
        id=SmpRegistration.id_for(SMP, participant),
        smp_id=SMP,
        participant=participant.lower(),
        services=services,
        created_at=NOW,
        last_modified_at=NOW,
    )


@pytest.fixture(params=["memory", "built-in"])
def registrar(request):
    return InMemorySmpRegistrar() if request.param == "memory" else StoredSmpRegistrar()


@pytest.fixture
def storage():
    return InMemoryStorage()


async def test_publish_lookup_republish_unpublish(registrar, storage):
    async with storage.unit_of_work() as uow:
        await registrar.publish(uow, reg("0088:123"))
        await uow.commit()
    async with storage.unit_of_work() as uow:
        found = await registrar.lookup(uow, "0088:123")
        assert found == reg("0088:123")
        await registrar.publish(uow, reg("0088:123", ("urn:doc::1", "urn:doc::2")))
        await uow.commit()
    async with storage.unit_of_work() as uow:
        found = await registrar.lookup(uow, "0088:123")
        assert [s.document_value for s in found.services] == ["urn:doc::1", "urn:doc::2"]
        await registrar.unpublish(uow, SMP, "0088:123")
        await uow.commit()
    async with storage.unit_of_work() as uow:
        assert await registrar.lookup(uow, "0088:123") is None


async def test_lookup_ignores_case_and_unknown_participants_are_none(registrar, storage):
    async with storage.unit_of_work() as uow:
        await registrar.publish(uow, reg("0088:abc"))
        await uow.commit()
    async with storage.unit_of_work() as uow:
        assert (await registrar.lookup(uow, "0088:ABC")).participant == "0088:abc"
        assert await registrar.lookup(uow, "0088:nope") is None


async def test_unpublishing_another_smps_registration_leaves_it(registrar, storage):
    async with storage.unit_of_work() as uow:
        await registrar.publish(uow, reg("0088:1"))
        await registrar.unpublish(uow, uuid.UUID(int=8), "0088:1")
        await uow.commit()
    async with storage.unit_of_work() as uow:
        assert await registrar.lookup(uow, "0088:1") is not None


async def test_the_built_in_smp_rolls_back_with_the_unit_of_work(storage):
    registrar = StoredSmpRegistrar()
    async with storage.unit_of_work() as uow:
        await registrar.publish(uow, reg("0088:9"))
        # no commit: the change that published it failed
    async with storage.unit_of_work() as uow:
        assert await registrar.lookup(uow, "0088:9") is None
