"""Our participants in the network's SML, over HTTP: the SMP registers itself at start, a
participant is created in the SML (PENDING, then ACTIVE; retried while the SML is down), a
deletion removes it, a participant another SMP has answers 409 explaining migration, and
migration works both ways. The SML is the in-memory one here (two SMPs share it), and the
local SOAP SML with its DNS in the last tests."""

from __future__ import annotations

import asyncio
import contextlib
import re
import shutil
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import attrs
import pytest

import pg
from fourcorner.adapters.memory.sml import InMemoryLocator, InMemorySml
from fourcorner.adapters.pki.testpki import cert_pem, load_test_pki
from fourcorner.adapters.smp.discovery import SmlDiscovery
from fourcorner.application import sml as sml_cases
from fourcorner.application import sml_tasks
from fourcorner.application.collections import LOCATOR_TASKS, PARTICIPANTS
from fourcorner.application.sml_worker import LocatorWorker
from fourcorner.domain.checkdigits import gs1_check_digit
from fourcorner.domain.network_services import Environment
from fourcorner.domain.participant import ParticipantStatus
from fourcorner.domain.sml import LocatorState, LocatorTask, migration_key_problem
from fourcorner.entrypoints.container import resolve
from sml_service import TestSml

from .conftest import _start, settings_for

ALICE = "alice@example.com"
TEST, PROD = Environment.TEST, Environment.PROD
OURS, THEIRS = "SMP-OURS", "SMP-THEIRS"


def gln(n: int) -> str:
    payload = f"730001{n:06d}"
    return payload + str(gs1_check_digit(payload))


@pytest.fixture
def shared_sml() -> InMemorySml:
    return InMemorySml()


@pytest.fixture
async def theirs(shared_sml: InMemorySml) -> InMemoryLocator:
    """Another operator's SMP in the same SML."""
    other = InMemoryLocator({TEST: THEIRS}, shared_sml)
    await other.register_smp(TEST, "https://their-smp.example.org")
    return other


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def ours(
    request: Any, tmp_path: Any, aiohttp_client: Any, shared_sml: InMemorySml, shared_pki
) -> AsyncIterator[Any]:
    shutil.copytree(shared_pki, tmp_path / "pki")
    locator = InMemoryLocator({TEST: OURS}, shared_sml)
    with contextlib.ExitStack() as stack:
        schema = (
            stack.enter_context(pg.fresh_schema("fc_sml")) if request.param == "postgres" else ""
        )
        settings = settings_for(request.param, tmp_path, schema)
        api = await _start(settings, aiohttp_client, locator=locator)
        api.org_id = (await api.org(ALICE))["id"]
        yield api
        await api.client.close()  # its pool closes before the schema goes


async def drain(api: Any) -> None:
    """Run the SML worker until nothing is due."""
    worker: LocatorWorker = await resolve(api.container.locator_worker)
    while await worker.run_once():
        pass


async def tasks(api: Any) -> dict[str, LocatorTask]:
    """The SML tasks stored, by subject (participant identifier, or SMP id)."""
    ctx = await resolve(api.container.context)
    async with ctx.uow() as uow:
        return {t.subject: t for t in await uow.repository(LOCATOR_TASKS).all()}


async def create(api: Any, ident: str, **extra: Any) -> tuple[int, Any]:
    org = api.org_id
    _, smps = await api.call("GET", f"/orgs/{org}/smps/alltouse", as_=ALICE)
    _, aps = await api.call("GET", f"/orgs/{org}/aps/alltouse", as_=ALICE)
    body = {
        "name": "Receiver",
        "participantIdentifier": ident,
        "smpRef": next(s["id"] for s in smps["items"] if s["environment"] == "TEST"),
        "apRef": next(a["id"] for a in aps["items"] if a["environment"] == "TEST"),
        **extra,
    }
    return await api.call("POST", f"/orgs/{org}/participants", as_=ALICE, json=body)


async def get(api: Any, pid: str) -> dict[str, Any]:
    status, body = await api.call("GET", f"/orgs/{api.org_id}/participants/{pid}", as_=ALICE)
    assert status == 200, body
    return body


async def delete(api: Any, pid: str) -> None:
    path = f"/orgs/{api.org_id}/participants/batch-delete"
    status, body = await api.call("POST", path, as_=ALICE, json={"ids": [pid]})
    assert status == 200, body


async def test_the_smp_registers_first_then_its_participants(ours, shared_sml) -> None:
    ident = f"0088:{gln(1)}"
    # before the SMP itself is registered, a participant waits
    status, p = await create(ours, ident)
    assert status == 201 and p["status"] == "PENDING", p
    assert "waiting for our SMP's own registration in the TEST SML" in p["statusReason"]
    assert (TEST, ident) not in shared_sml.participants
    await drain(ours)
    smp_url = ours.container.settings().base_url + "/smp/test"
    assert shared_sml.smps == {(TEST, OURS): smp_url}
    assert shared_sml.smp_of(TEST, ident) == OURS
    assert (await get(ours, p["id"]))["status"] == "ACTIVE"
    # the operator's own participant (where statuses reach it) is registered too
    assert any(k[1].startswith("0242:") for k in shared_sml.participants)
    # now a new participant is registered by the request itself
    status, p2 = await create(ours, f"0088:{gln(2)}")
    assert status == 201 and p2["status"] == "ACTIVE" and p2.get("statusReason") is None
    assert shared_sml.smp_of(TEST, f"0088:{gln(2)}") == OURS
    # the status filter knows the new values
    path = f"/orgs/{ours.org_id}/participants?filter=status:eq:PENDING"
    status, listed = await ours.call("GET", path, as_=ALICE)
    assert status == 200 and listed["items"] == []


async def test_a_registration_is_retried_while_the_sml_is_down(ours, shared_sml) -> None:
    await drain(ours)
    shared_sml.down = True
    ident = f"0088:{gln(3)}"
    status, p = await create(ours, ident)
    assert status == 201 and p["status"] == "PENDING"
    assert "cannot be reached" in (await get(ours, p["id"]))["statusReason"]
    await drain(ours)  # not due yet: the retry waits
    shared_sml.down = False
    assert shared_sml.smp_of(TEST, ident) is None
    # a later run, once due, registers it
    await _run_at(ours, ours.container.clock()() + timedelta(minutes=5))
    assert shared_sml.smp_of(TEST, ident) == OURS
    got = await get(ours, p["id"])
    assert got["status"] == "ACTIVE" and got.get("statusReason") is None


async def _run_at(api: Any, moment: Any) -> None:
    """Run the SML work due at ``moment``."""
    ctx = await resolve(api.container.context)
    net = await resolve(api.container.network)
    worker = LocatorWorker(attrs.evolve(ctx, clock=lambda: moment), net)
    while await worker.run_once():
        pass


async def test_a_slow_sml_leaves_the_participant_pending_for_the_workers(
    ours, shared_sml, monkeypatch
) -> None:
    await drain(ours)
    monkeypatch.setattr(sml_tasks, "FIRST_WAIT", 0.05)
    shared_sml.delay = 1.0
    ident = f"0088:{gln(13)}"
    status, p = await create(ours, ident)
    assert status == 201 and p["status"] == "PENDING", p
    task = (await tasks(ours))[ident]
    assert task.attempts == 1 and task.state is LocatorState.PENDING  # claimed, not finished
    shared_sml.delay = 0.0
    await _run_at(ours, ours.container.clock()() + timedelta(minutes=2))  # the lease is over
    assert (await get(ours, p["id"]))["status"] == "ACTIVE"


async def test_at_start_a_participant_gets_the_status_its_task_has(ours, shared_sml) -> None:
    await drain(ours)
    _, p = await create(ours, f"0088:{gln(14)}")
    ctx = await resolve(ours.container.context)
    async with ctx.uow() as uow:  # as if an update had raced the worker's outcome
        stored = await uow.repository(PARTICIPANTS).get(uuid.UUID(p["id"]))
        stale = attrs.evolve(stored, status=ParticipantStatus.PENDING)
        await uow.repository(PARTICIPANTS).update(stale)
        await uow.commit()
    assert (await get(ours, p["id"]))["status"] == "PENDING"
    net = await resolve(ours.container.network)
    await sml_cases.ensure_smp(ctx, net, {TEST: ours.container.settings().base_url + "/smp/test"})
    assert (await get(ours, p["id"]))["status"] == "ACTIVE"


async def test_a_participant_of_another_smp_answers_409_explaining_migration(
    ours, shared_sml, theirs
) -> None:
    await drain(ours)
    ident = f"0088:{gln(4)}"
    await theirs.create(TEST, ident)
    status, body = await create(ours, ident)
    assert status == 409 and body["code"] == "AT-1105", body
    assert "migration key" in body["error"] and "migrationKey" in body["error"]
    # nothing was kept: no participant, no SMP entry, the SML unchanged
    _, listed = await ours.call("GET", f"/orgs/{ours.org_id}/participants", as_=ALICE)
    assert ident not in [p["participantIdentifier"] for p in listed["items"]]
    status, _ = await ours.call("GET", f"/smp/test/iso6523-actorid-upis::{ident}")
    assert status == 404
    assert shared_sml.smp_of(TEST, ident) == THEIRS


async def test_moving_a_participant_here_with_its_key(ours, shared_sml, theirs) -> None:
    await drain(ours)
    ident = f"0088:{gln(5)}"
    await theirs.create(TEST, ident)
    await theirs.prepare_migration(TEST, ident, "Ab12@#cdEF34")
    status, body = await create(ours, ident, migrationKey="Wrong12@#abCD")
    assert status == 409 and body["code"] == "AT-1104", body
    assert "migration key was not accepted" in body["error"]
    assert shared_sml.smp_of(TEST, ident) == THEIRS
    status, p = await create(ours, ident, migrationKey="Ab12@#cdEF34")
    assert status == 201 and p["status"] == "ACTIVE", p
    assert shared_sml.smp_of(TEST, ident) == OURS
    assert "migrationKey" not in p and "sealedKey" not in p


async def test_moving_a_participant_away(ours, shared_sml, theirs) -> None:
    await drain(ours)
    ident = f"0088:{gln(6)}"
    _, p = await create(ours, ident)
    assert p["status"] == "ACTIVE"
    path = f"/orgs/{ours.org_id}/participants/{p['id']}/migration_key"
    status, body = await ours.call("POST", path, as_=ALICE)
    assert status == 201, body
    key = body["migrationKey"]
    assert migration_key_problem(key) is None
    assert body["participantIdentifier"] == ident and body["environment"] == "TEST"
    # the key is not kept: a second call prepares a new one
    _, again = await ours.call("POST", path, as_=ALICE)
    assert again["migrationKey"] != key
    await theirs.migrate(TEST, ident, again["migrationKey"])
    assert shared_sml.smp_of(TEST, ident) == THEIRS
    # deleting it here afterwards leaves their registration alone, and is done with
    await delete(ours, p["id"])
    await drain(ours)
    assert shared_sml.smp_of(TEST, ident) == THEIRS
    assert ("delete", TEST, ident) in shared_sml.calls
    assert ident not in await tasks(ours)
    # a member who is not an orgadmin may not
    status, _ = await ours.call("POST", path, as_="stranger@example.com")
    assert status in (403, 404)


async def test_a_deleted_participant_leaves_the_sml(ours, shared_sml) -> None:
    await drain(ours)
    ident = f"0088:{gln(7)}"
    _, p = await create(ours, ident)
    await delete(ours, p["id"])
    assert shared_sml.smp_of(TEST, ident) == OURS  # until the worker has run
    status, body = await create(ours, ident)
    assert status == 409 and "still being removed" in body["error"], body
    await drain(ours)
    assert shared_sml.smp_of(TEST, ident) is None
    assert ident not in await tasks(ours)
    status, p = await create(ours, ident)
    assert status == 201 and p["status"] == "ACTIVE"
    assert (await tasks(ours))[ident].state is LocatorState.DONE


async def test_a_refusal_found_by_the_worker_fails_the_participant(
    ours, shared_sml, theirs
) -> None:
    await drain(ours)
    ident = f"0088:{gln(8)}"
    shared_sml.down = True
    _, p = await create(ours, ident)
    shared_sml.down = False
    await theirs.create(TEST, ident)
    await _run_at(ours, ours.container.clock()() + timedelta(minutes=5))
    got = await get(ours, p["id"])
    assert got["status"] == "FAILED"
    assert "another SMP" in got["statusReason"] and "migration key" in got["statusReason"]
    assert (await tasks(ours))[ident].state is LocatorState.FAILED
    # deleting it does not touch the other SMP's registration, nor ask the SML
    await delete(ours, p["id"])
    await drain(ours)
    assert shared_sml.smp_of(TEST, ident) == THEIRS
    assert ("delete", TEST, ident) not in shared_sml.calls and ident not in await tasks(ours)


async def test_without_an_sml_nothing_is_registered(
    tmp_path: Any, aiohttp_client: Any, shared_pki
) -> None:
    shutil.copytree(shared_pki, tmp_path / "pki")
    api = await _start(settings_for("memory", tmp_path), aiohttp_client)
    api.org_id = (await api.org(ALICE))["id"]
    status, p = await create(api, f"0088:{gln(9)}")
    assert status == 201 and p["status"] == "ACTIVE"
    status, body = await create(api, f"0088:{gln(10)}", migrationKey="Ab12@#cdEF34")
    assert status == 400 and body["details"][0]["field"] == "$.migrationKey"
    path = f"/orgs/{api.org_id}/participants/{p['id']}/migration_key"
    status, body = await api.call("POST", path, as_=ALICE)
    assert status == 409 and "no SML is configured" in body["error"]


# --- the local SOAP SML and its DNS ---------------------------------------------------------


async def test_over_soap_a_registered_participant_is_found_by_dns(
    sml_service: TestSml, tmp_path: Any, aiohttp_client: Any, shared_pki
) -> None:
    shutil.copytree(shared_pki, tmp_path / "pki")
    # the SML accepts the operator's SMP certificate (of its test PKI) as client certificate
    for anchor in load_test_pki(tmp_path / "pki").trust_anchors:
        sml_service.trust(cert_pem(anchor))
    settings = settings_for(
        "sqlite",
        tmp_path,
        sml_url_test=sml_service.url,
        smp_id_test="FOURCORNER-TEST",
        sml_ca_file=str(sml_service.ca_file),
    )
    api = await _start(settings, aiohttp_client)
    api.org_id = (await api.org(ALICE))["id"]
    await drain(api)
    assert sml_service.smps["FOURCORNER-TEST"].logical == settings.base_url + "/smp/test"
    ident = f"0088:{gln(11)}"
    status, p = await create(api, ident)
    assert status == 201 and p["status"] == "ACTIVE", p
    found = SmlDiscovery({TEST: sml_service.dns.zone}, [("127.0.0.1", sml_service.dns.port)])
    assert (
        await found.smp_url(("iso6523-actorid-upis", ident), TEST)
        == settings.base_url + "/smp/test"
    )
    # a move away over SOAP: the key is one the SML takes
    path = f"/orgs/{api.org_id}/participants/{p['id']}/migration_key"
    status, body = await api.call("POST", path, as_=ALICE)
    assert status == 201 and re.fullmatch(r"\S{24}", body["migrationKey"]), body
    assert sml_service.migrations[("iso6523-actorid-upis", ident)][1] == body["migrationKey"]
    await delete(api, p["id"])
    await drain(api)
    assert sml_service.participants.get(("iso6523-actorid-upis", ident)) is None
    assert sml_service.invalid == []
    # the SML gone: preparing a move answers 503
    _, p = await create(api, f"0088:{gln(12)}")
    sml_service.down = True
    status, body = await api.call(
        "POST", f"/orgs/{api.org_id}/participants/{p['id']}/migration_key", as_=ALICE
    )
    assert status == 503 and body["code"] == "AT-1503", body


async def test_processes_starting_together_queue_the_smp_once(ours, shared_sml) -> None:
    ctx = await resolve(ours.container.context)
    async with ctx.uow() as uow:  # as on a first start: nothing queued yet
        for task in await uow.repository(LOCATOR_TASKS).all():
            await uow.repository(LOCATOR_TASKS).remove(task.id)
        await uow.commit()
    url = {TEST: "https://smp.example.org/smp"}
    net = await resolve(ours.container.network)
    await asyncio.gather(*(sml_cases.ensure_smp(ctx, net, url) for _ in range(4)))
    assert (await tasks(ours))[OURS].smp_url == "https://smp.example.org/smp"
