"""Upgrading a database to migration 0017: a participant stored with an OUTDATED business card
before the workers asked the directory again is due at once (its record holds no retries
yet), and the workers' claim finds it; the others are due never."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import attrs

import scale_records
from fourcorner.adapters.sql.codec import make_converter
from fourcorner.application.collections import PARTICIPANTS
from fourcorner.application.directory_worker import due
from fourcorner.domain import clock
from fourcorner.domain.participant import (
    LONG_AGO,
    DirectoryPublication,
    DirectoryRetry,
    Participant,
    PublicationState,
)
from upgrade import Upgraded

UPGRADE = 17  # the migration under test
NOW = datetime(2026, 3, 1, tzinfo=UTC)
SHAPE = scale_records.Shape(transactions=0, organisations=1, participants=3)
INSERT_PARTICIPANT = (
    'INSERT INTO "participants" ("id", "name", "participant_identifier", "environment", '
    '"smp_ref", "ap_ref", "transport_profile", "status", "created_at", "org_id", '
    '"identifier_key", "search_text", "data") VALUES ({})'
)
_CONV = make_converter()


def participant(k: int, state: PublicationState) -> Participant:
    """The ``k``th participant of a small organisation, its card ``state`` in the directory."""
    publication = DirectoryPublication(
        state,
        NOW if state is not PublicationState.NOT_REQUESTED else None,
        NOW if state is PublicationState.OUTDATED else None,
        "the directory answered 503" if state is PublicationState.OUTDATED else None,
    )
    (org,) = scale_records.organisations(SHAPE)
    return attrs.evolve(org.participants[k], directory=publication)


def row(p: Participant) -> tuple[str, tuple[Any, ...]]:
    """The row as the code before 0017 wrote it: no retries in the record."""
    data = _CONV.unstructure(p)
    data.pop("directory_retry")
    values = (
        *(str(p.id), p.name, p.identifier_key, p.environment.value, str(p.smp_ref)),
        *(str(p.ap_ref), p.transport_profile, p.status.value, clock.sortable(p.created_at)),
        *(str(p.org_id), p.identifier_key, "", json.dumps(data)),
    )
    return INSERT_PARTICIPANT, values


async def test_an_outdated_card_stored_before_is_due_at_once(upgraded: Upgraded) -> None:
    states = (PublicationState.OUTDATED, PublicationState.PUBLISHED, PublicationState.NOT_REQUESTED)
    made = {p.id: p for p in (participant(k, state) for k, state in enumerate(states))}
    outdated = participant(0, PublicationState.OUTDATED).id
    async with upgraded(UPGRADE, [row(p) for p in made.values()]) as storage:
        async with storage.unit_of_work() as uow:
            found = {p.id: p for p in await uow.repository(PARTICIPANTS).all()}
            claimed = await uow.repository(PARTICIPANTS).claim(due(LONG_AGO, 10))
        assert found == made  # read back as stored, with no retries
        assert found[outdated].directory_retry == DirectoryRetry()
        assert [p.id for p in claimed] == [outdated]
        assert found[outdated].directory_due == LONG_AGO
        # once the worker writes it, its due time is the record's
        later = attrs.evolve(found[outdated], directory_retry=DirectoryRetry(0, 1, NOW))
        async with storage.unit_of_work() as uow:
            await uow.repository(PARTICIPANTS).update(later)
            await uow.commit()
        async with storage.unit_of_work() as uow:
            assert await uow.repository(PARTICIPANTS).claim(due(LONG_AGO, 10)) == []
            assert [p.id for p in await uow.repository(PARTICIPANTS).claim(due(NOW, 10))] == [
                outdated
            ]
