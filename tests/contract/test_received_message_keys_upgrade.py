"""Upgrading a database to migration 0022: each document received before gets the key of the AS4
message that brought it (``Transaction.message_key``), exactly as the code computes it, so a
retry of that message is found (``received_as``) and clashes with it whatever organisation
its receiver belongs to now. A message stored twice before (under two organisations, after
its receiver moved) keeps its key on its earliest record; what no AS4 message brought has
none."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import attrs
import pytest

from fourcorner.application.collections import TRANSACTIONS
from fourcorner.application.listing import equals
from fourcorner.application.repositories import Transactions
from fourcorner.application.storage import Query
from fourcorner.domain.errors import Conflict
from fourcorner.domain.transaction import Direction, Transaction
from upgrade import Upgraded, transaction_row

from .test_repositories import AP_1
from .test_repositories import received as received_at_ap

UPGRADE = 22  # the migration under test
NOW = datetime(2026, 3, 1, tzinfo=UTC)
ORG_B, ORG_C = uuid.UUID(int=12), uuid.UUID(int=13)
RECEIVER = "9925:be0123abc"


def received(n: int, **changes: object) -> Transaction:
    """``test_repositories.received`` (a document received at ``AP_1`` from ``POP000001`` for
    ``RECEIVER`` by organisation A in the AS4 message ``m-1@test``), ``n`` seconds after
    ``NOW``, unless ``changes`` say otherwise."""
    at = NOW + timedelta(seconds=n)
    made = attrs.evolve(
        received_at_ap(n),
        created_at=at,
        created_ns=int(at.timestamp()) * 1_000_000_000,
        last_modified_at=at,
    )
    return attrs.evolve(made, **changes)


FIRST = received(2)  # the message, taken in by organisation A
# the same message again, stored a second time by organisation B after the receiver moved to
# it (before this release); stored later, but with a lower id and written first
AGAIN = received(3, id=uuid.UUID(int=300), org_id=ORG_B)
KEYED = [
    FIRST,
    received(4, sender_sp="POP000002"),  # another sending access point, the same MessageId
    received(5, receiver_id="0088:7300010000028"),  # the same MessageId to another receiver
    # characters beyond ASCII: each length counts characters, as Python counts them
    received(6, sender_sp="PÖP000003", receiver_id="9925:bé0123", as4_message_id="m-ü@test"),
]
UNKEYED = [
    received(7, direction=Direction.TO_NETWORK),  # sent, not received
    received(8, as4_message_id=""),  # no MessageId recorded
    received(9, sender_sp=""),  # no sending access point recorded
]
STORED = [AGAIN, *KEYED, *UNKEYED]


def rows() -> list[tuple[str, tuple[object, ...]]]:
    return [transaction_row(tx, without=("messageKey",)) for tx in STORED]


def test_the_records_stand_for_what_the_migration_meets() -> None:
    assert AGAIN.message_key == FIRST.message_key is not None
    assert all(tx.message_key is not None for tx in KEYED)
    assert len({tx.message_key for tx in KEYED}) == len(KEYED)
    assert [tx.message_key for tx in UNKEYED] == [None] * len(UNKEYED)


async def test_received_documents_get_the_key_of_their_message(upgraded: Upgraded) -> None:
    async with upgraded(UPGRADE, rows()) as storage:
        async with storage.unit_of_work() as uow:
            repo = uow.repository(TRANSACTIONS)
            assert {tx.id: tx for tx in await repo.all()} == {tx.id: tx for tx in STORED}
            for tx in KEYED:  # the key the code computes, found by the column
                assert await repo.all(messageKey=tx.message_key) == [tx]
            unkeyed = Query(where=(equals(TRANSACTIONS, "messageKey", None),), limit=100)
            left = {tx.id for tx in (await repo.list(unkeyed)).items}
            assert left == {tx.id for tx in (AGAIN, *UNKEYED)}
            found = Transactions(uow).received_as
            assert await found("m-1@test", AP_1, "POP000001", RECEIVER) == FIRST
        # a retry of the message, its receiver now in a third organisation, clashes with it
        again = received(10, org_id=ORG_C)
        async with storage.unit_of_work() as uow:
            with pytest.raises(Conflict):
                await uow.repository(TRANSACTIONS).add(again)
                await uow.commit()
        # a new message of the same sender to the same receiver is stored
        new = received(11, as4_message_id="m-2@test")
        async with storage.unit_of_work() as uow:
            await uow.repository(TRANSACTIONS).add(new)
            await uow.commit()
        async with storage.unit_of_work() as uow:
            assert await uow.repository(TRANSACTIONS).get(new.id) == new
            assert await uow.repository(TRANSACTIONS).get(again.id) is None
