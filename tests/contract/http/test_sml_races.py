"""A participant's SML task against the participant's own changes (``asyncio.gather``, many
rounds, on PostgreSQL where the units of work overlap): whatever the interleaving, every
change is kept and every request and outcome recorded, with no lock taken in an order that
deadlocks.

A deletion (``participants.delete_many``) holds the participant, then its task
(``sml.wish_removed``), and the worker recording an outcome (``sml_tasks._record``) takes
them in the same order: in the other order the two deadlock, and PostgreSQL fails one of
them (the deletion answers 503, or the worker's outcome is lost until its lease ends).

A process starting (``sml._ensure_smp``: each participant given the status its task has)
locks those whose status differs and reads them again before it writes them, so a change
committed in between (a name, the document types) is kept.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from datetime import timedelta
from typing import Any

import attrs
import pytest

from fourcorner.application import sml as sml_cases
from fourcorner.application.collections import PARTICIPANTS
from fourcorner.domain.participant import ParticipantStatus
from fourcorner.entrypoints.container import resolve

from . import test_sml_participants as sml_participants
from .test_sml_participants import ALICE, TEST, _run_at, create, drain, get, gln

# the fixtures of those tests: our service with the in-memory SML, and that SML
ours, shared_sml = sml_participants.ours, sml_participants.shared_sml

ROUNDS = 30
ON_POSTGRES = pytest.mark.parametrize(
    "ours", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)


async def _stale_status(api: Any, pid: str) -> None:
    """The participant's status made PENDING (its task is DONE), as the start fixes it."""
    ctx = await resolve(api.container.context)
    async with ctx.uow() as uow:
        stored = await uow.repository(PARTICIPANTS).lock(uuid.UUID(pid))
        await uow.repository(PARTICIPANTS).update(
            attrs.evolve(stored, status=ParticipantStatus.PENDING)
        )
        await uow.commit()


@ON_POSTGRES
async def test_a_participant_changed_while_a_process_starts_keeps_the_change(ours: Any) -> None:
    await drain(ours)
    # a few participants, so the start takes a few statements between its read and its writes
    made = []
    for n in range(4):
        status, p = await create(ours, f"0088:{gln(40 + n)}")
        assert status == 201 and p["status"] == "ACTIVE", p
        made.append(p["id"])
    ctx = await resolve(ours.container.context)
    net = await resolve(ours.container.network)
    urls = {TEST: ours.container.settings().base_url + "/smp/test"}
    lost = []
    for n in range(ROUNDS):
        pid = made[n % len(made)]
        for other in made:
            await _stale_status(ours, other)
        path = f"/orgs/{ours.org_id}/participants/{pid}"
        _, (status, body) = await asyncio.gather(
            sml_cases.ensure_smp(ctx, net, urls),
            ours.call("PUT", path, as_=ALICE, json={"name": f"renamed {n}"}),
        )
        assert status == 200, (n, body)
        got = await get(ours, pid)
        assert got["status"] == "ACTIVE", (n, got)
        if got["name"] != f"renamed {n}":
            lost.append((n, got["name"]))
    assert not lost, f"changes undone (round, name kept): {lost}"


@ON_POSTGRES
async def test_a_participant_deleted_while_the_worker_records_its_registration(
    ours: Any,
    shared_sml: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    await drain(ours)
    path = f"/orgs/{ours.org_id}/participants/batch-delete"
    failed = []
    for n in range(ROUNDS):
        shared_sml.down = True  # the request's own attempt fails: left to the worker
        status, p = await create(ours, f"0088:{gln(60 + n)}")
        assert status == 201 and p["status"] == "PENDING", p
        shared_sml.down = False
        caplog.clear()
        due = ours.container.clock()() + timedelta(minutes=5)
        with caplog.at_level(logging.ERROR, logger="fourcorner.sml"):
            _, (status, body) = await asyncio.gather(
                _run_at(ours, due),
                ours.call("POST", path, as_=ALICE, json={"ids": [p["id"]]}),
            )
        if status != 200:
            failed.append((n, "the deletion answered", status, body["error"]))
        failed += [(n, "the worker logged", r.getMessage()) for r in caplog.records]
    assert not failed, failed
