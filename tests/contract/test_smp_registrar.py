"""The SMP registration port: one contract for the in-memory and the built-in adapters."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from fourcorner.adapters.memory import InMemoryStorage
from fourcorner.adapters.memory.smp import InMemorySmpRegistrar
from fourcorner.adapters.smp.registrar import StoredSmpRegistrar
from fourcorner.application.collections import SMPS
from fourcorner.domain.network_services import OPERATOR_ORG_ID, Environment, Smp
from fourcorner.domain.smp import Endpoint, ProcessEntry, ServiceEntry, SmpRegistration

NOW = datetime(2026, 1, 2, tzinfo=UTC)
SMP = uuid.UUID(int=7)  # the TEST SMP
PROD_SMP = uuid.UUID(int=9)
TEST = Environment.TEST


def reg(
    participant: str, docs: tuple[str, ...] = ("urn:doc::1",), smp: uuid.UUID = SMP
) -> SmpRegistration:
    endpoint = Endpoint("peppol-transport-as4-v2_0", "https://ap.example/as4", "MIIB")
    services = tuple(
        ServiceEntry("busdox-docid-qns", d, (ProcessEntry("cenbii-procid-ubl", "p", (endpoint,)),))
        for d in docs
    )
    return SmpRegistration(
        id=SmpRegistration.id_for(smp, participant),
        smp_id=smp,
        participant=participant.lower(),
        services=services,
        created_at=NOW,
        last_modified_at=NOW,
    )


@pytest.fixture(params=["memory", "built-in"])
def registrar(request):
    return InMemorySmpRegistrar() if request.param == "memory" else StoredSmpRegistrar()


@pytest.fixture
async def storage():
    storage = InMemoryStorage()
    async with storage.unit_of_work() as uow:
        for ident, env in ((SMP, TEST), (PROD_SMP, Environment.PROD)):
            smp = Smp(ident, OPERATOR_ORG_ID, f"SMP {env.value}", env, f"https://smp/{env}", NOW)
            await uow.repository(SMPS).add(smp)
        await uow.commit()
    return storage


async def test_publish_lookup_republish_unpublish(registrar, storage):
    async with storage.unit_of_work() as uow:
        await registrar.publish(uow, reg("0088:123"))
        await uow.commit()
    async with storage.unit_of_work() as uow:
        found = await registrar.lookup(uow, TEST, "0088:123")
        assert found == reg("0088:123")
        await registrar.publish(uow, reg("0088:123", ("urn:doc::1", "urn:doc::2")))
        await uow.commit()
    async with storage.unit_of_work() as uow:
        found = await registrar.lookup(uow, TEST, "0088:123")
        assert [s.document_value for s in found.services] == ["urn:doc::1", "urn:doc::2"]
        await registrar.unpublish(uow, SMP, "0088:123")
        await uow.commit()
    async with storage.unit_of_work() as uow:
        assert await registrar.lookup(uow, TEST, "0088:123") is None


async def test_lookup_ignores_case_and_unknown_participants_are_none(registrar, storage):
    async with storage.unit_of_work() as uow:
        await registrar.publish(uow, reg("0088:abc"))
        await uow.commit()
    async with storage.unit_of_work() as uow:
        assert (await registrar.lookup(uow, TEST, "0088:ABC")).participant == "0088:abc"
        assert await registrar.lookup(uow, TEST, "0088:nope") is None


async def test_unpublishing_another_smps_registration_leaves_it(registrar, storage):
    async with storage.unit_of_work() as uow:
        await registrar.publish(uow, reg("0088:1"))
        await registrar.unpublish(uow, uuid.UUID(int=8), "0088:1")
        await uow.commit()
    async with storage.unit_of_work() as uow:
        assert await registrar.lookup(uow, TEST, "0088:1") is not None


async def test_the_built_in_smp_rolls_back_with_the_unit_of_work(storage):
    registrar = StoredSmpRegistrar()
    async with storage.unit_of_work() as uow:
        await registrar.publish(uow, reg("0088:9"))
        # no commit: the change that published it failed
    async with storage.unit_of_work() as uow:
        assert await registrar.lookup(uow, TEST, "0088:9") is None


async def test_the_same_participant_in_each_environment_is_found_in_its_own(registrar, storage):
    async with storage.unit_of_work() as uow:
        await registrar.publish(uow, reg("0088:2"))
        await registrar.publish(uow, reg("0088:2", ("urn:doc::prod",), smp=PROD_SMP))
        await registrar.publish(uow, reg("0088:3", smp=PROD_SMP))
        await uow.commit()
    async with storage.unit_of_work() as uow:
        assert (await registrar.lookup(uow, TEST, "0088:2")).smp_id == SMP
        prod = await registrar.lookup(uow, Environment.PROD, "0088:2")
        assert prod.smp_id == PROD_SMP
        assert prod.services[0].document_value == "urn:doc::prod"
        assert await registrar.lookup(uow, TEST, "0088:3") is None
        await registrar.unpublish(uow, SMP, "0088:2")
        await uow.commit()
    async with storage.unit_of_work() as uow:
        assert await registrar.lookup(uow, TEST, "0088:2") is None
        assert await registrar.lookup(uow, Environment.PROD, "0088:2") is not None
