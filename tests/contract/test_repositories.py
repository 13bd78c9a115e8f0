"""The typed repositories (``application.repositories``) over every storage adapter: each named
finder finds what its name says, in a unit of work and in a reader, and the generic operations
pass through to the store."""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import attrs
import psycopg
import pytest

from fourcorner.adapters.postgres import PostgresStorage
from fourcorner.adapters.sql.dialect import POSTGRES, SQLITE, Dialect
from fourcorner.adapters.sql.table import Table
from fourcorner.application.collections import DELIVERIES
from fourcorner.application.repositories import (
    ApiKeys,
    Deliveries,
    Members,
    Organisations,
    Transactions,
)
from fourcorner.domain.member import MemberStatus
from fourcorner.domain.organisation import UserRef
from fourcorner.domain.transaction import Direction, Transaction
from fourcorner.domain.webhook import Delivery, DeliveryStatus
from fourcorner.entrypoints.http.examples import TRANSACTION

from .test_storage import ORG_A, ORG_B, T0, api_key, member, org

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


AP_1, AP_2 = uuid.UUID(int=201), uuid.UUID(int=202)


def received(n: int, **changes: object) -> Transaction:
    """A document received at ``AP_1`` from ``POP000001`` for ``9925:be0123abc`` in the AS4
    message ``m-1@test``, unless ``changes`` say otherwise."""
    made = attrs.evolve(
        TRANSACTION,
        id=uuid.UUID(int=300 + n),
        org_id=ORG_A,
        direction=Direction.FROM_NETWORK,
        ap_id=AP_1,
        receiver_id="9925:be0123abc",
        doc_instance_id=f"INV-{n}",
        sender_sp="POP000001",
        as4_message_id="m-1@test",
    )
    return attrs.evolve(made, **changes)


async def test_a_replay_is_found_by_message_access_point_sender_and_receiver(
    store: StorageUnderTest,
) -> None:
    """``received_as``: the MessageId names a record only together with the access point it
    came in at, the sending access point and the receiver (exactly as written), received."""
    replayed = received(1)
    others = [
        received(2, receiver_id="9925:be0999abc"),
        received(3, receiver_id="9925:BE0123ABC"),
        received(4, sender_sp="POP000002"),
        received(5, ap_id=AP_2),
        received(6, direction=Direction.TO_NETWORK),
        received(7, as4_message_id="m-2@test"),
        received(8, org_id=ORG_B, receiver_id="9925:be0777abc"),
    ]
    async with store.unit_of_work() as uow:
        for tx in (*others, replayed):
            await Transactions(uow).add(tx)
        await uow.commit()
    async with store.unit_of_work() as uow:
        found = Transactions(uow).received_as
        assert await found("m-1@test", AP_1, "POP000001", "9925:be0123abc") == replayed
        assert await found("m-1@test", AP_1, "POP000001", "9925:be0999abc") == others[0]
        assert await found("m-1@test", AP_1, "POP000001", "9925:BE0123ABC") == others[1]
        assert await found("m-1@test", AP_1, "POP000002", "9925:be0123abc") == others[2]
        assert await found("m-1@test", AP_2, "POP000001", "9925:be0123abc") == others[3]
        assert await found("m-2@test", AP_1, "POP000001", "9925:be0123abc") == others[5]
        # another organisation's receiver of the same message is found for that receiver only
        assert await found("m-1@test", AP_1, "POP000001", "9925:be0777abc") == others[6]
        assert await found("m-1@test", AP_1, "POP000003", "9925:be0123abc") is None
        assert await found("m-1@test", AP_1, "POP000001", "9925:be0555abc") is None
        assert await found("m-3@test", AP_1, "POP000001", "9925:be0123abc") is None


HELD = 1300  # webhooks a delivery worker's claim may leave out: held back, and at full places


async def test_a_claim_of_due_deliveries_leaves_out_any_number_of_webhooks(
    store: StorageUnderTest,
) -> None:
    """``claim_due`` leaves out the deliveries of the webhooks it is given, as many as a worker
    may name (those of its full endpoints and hosts, and those it holds back), and claims the
    others; none named: every due one."""
    hooks = [uuid.uuid4() for _ in range(6)]
    made = [
        Delivery(uuid.uuid4(), uuid.uuid4(), hook, ORG_A, T0 + timedelta(seconds=n), T0)
        for n, hook in enumerate(hooks)
    ]
    async with store.unit_of_work() as uow:
        await Deliveries(uow).add_many(made)
        await uow.commit()
    skipped = [*hooks[1::2], *(uuid.uuid4() for _ in range(HELD))]
    now = T0 + timedelta(minutes=1)
    async with store.unit_of_work() as uow:
        got = await Deliveries(uow).claim_due(now, 10, skip_webhooks=[str(h) for h in skipped])
        assert got == made[0::2]
    async with store.unit_of_work() as uow:
        assert await Deliveries(uow).claim_due(now, 10) == made


async def test_a_claim_of_due_deliveries_leaves_out_the_hosts_it_is_given(
    store: StorageUnderTest,
) -> None:
    """``claim_due`` leaves out the deliveries that hold one of the hosts it is given (a
    worker's full hosts), however many webhooks they are of; one that holds none (stored
    before hosts were kept) is left out by none."""
    hosts = ["slow.example.com:443", "[2001:db8::1]:8443", "fast.example.com:443", ""]
    made = [
        Delivery(
            uuid.uuid4(),
            uuid.uuid4(),
            uuid.uuid4(),
            ORG_A,
            T0 + timedelta(seconds=n),
            T0,
            host=hosts[n % len(hosts)],
        )
        for n in range(12)
    ]
    async with store.unit_of_work() as uow:
        await Deliveries(uow).add_many(made)
        await uow.commit()
    now = T0 + timedelta(minutes=1)
    async with store.unit_of_work() as uow:
        got = await Deliveries(uow).claim_due(now, 20, skip_hosts=hosts[:2])
        assert got == [d for d in made if d.host not in hosts[:2]]
    async with store.unit_of_work() as uow:
        skipped = [made[0].webhook_id, made[2].webhook_id]
        got = await Deliveries(uow).claim_due(now, 20, skipped, ["fast.example.com:443"])
        assert got == [d for i, d in enumerate(made) if i not in (0, 2) and d.host != hosts[2]]


async def test_a_webhooks_pending_deliveries_move_to_its_new_host(
    store: StorageUnderTest,
) -> None:
    """``move_pending``: the webhook's pending deliveries at another host hold the new one;
    its delivered ones, and the other webhooks', stay as they were."""
    hook, other = uuid.uuid4(), uuid.uuid4()
    old, new = "old.example.com:443", "new.example.com:443"

    def delivery(webhook: uuid.UUID, n: int, **fields: object) -> Delivery:
        return Delivery(
            uuid.uuid4(),
            uuid.uuid4(),
            webhook,
            ORG_A,
            T0 + timedelta(seconds=n),
            T0,
            host=old,
            **fields,  # type: ignore[arg-type]
        )

    pending = [delivery(hook, n) for n in range(3)]
    done = delivery(hook, 3, status=DeliveryStatus.DELIVERED)
    others = delivery(other, 4)
    async with store.unit_of_work() as uow:
        await Deliveries(uow).add_many([*pending, done, others])
        await uow.commit()
    async with store.unit_of_work() as uow:
        assert await Deliveries(uow).move_pending(hook, new) == 3
        await uow.commit()
    async with store.unit_of_work() as uow:
        found = {
            d.id: d
            for d in await Deliveries(uow).of_events([d.event_id for d in [*pending, done, others]])
        }
        assert await Deliveries(uow).move_pending(hook, new) == 0  # none left at another
    assert {found[d.id].host for d in pending} == {new}
    assert found[done.id] == done and found[others.id] == others
    assert all(found[d.id] == attrs.evolve(d, host=new) for d in pending)


@pytest.mark.parametrize("dialect", [SQLITE, POSTGRES], ids=["sqlite", "postgres"])
def test_the_hosts_a_claim_leaves_out_are_one_parameter(dialect: Dialect) -> None:
    """However many hosts a claim leaves out, its statement is the same text, with one
    parameter for them all."""
    table = Table(DELIVERIES, dialect)
    shapes = set()
    for count in (1, 2, 40):
        due = Deliveries.due(
            T0, 10, [uuid.uuid4()], [f"h{n}.example.com:443" for n in range(count)]
        )
        statement = table.claim(due)
        shapes.add(statement.sql)
        assert len(statement.params) == 6  # status, due time, lease, webhooks, hosts, limit
    assert len(shapes) == 1


@pytest.mark.parametrize("dialect", [SQLITE, POSTGRES], ids=["sqlite", "postgres"])
def test_the_webhooks_a_claim_leaves_out_are_one_parameter(dialect: Dialect) -> None:
    """However many webhooks a claim leaves out, its statement is the same text, with one
    parameter for them all: one plan, not one per count of webhooks (nor 1,300 parameters)."""
    table = Table(DELIVERIES, dialect)
    shapes = set()
    for count in (1, 2, HELD):
        due = Deliveries.due(T0, 10, [uuid.uuid4() for _ in range(count)])
        statement = table.claim(due)
        shapes.add(statement.sql)
        assert len(statement.params) == 5  # status, due time, lease, the webhooks, the limit
    assert len(shapes) == 1


async def _blocked_by(conn: psycopg.AsyncConnection[Any], pid: int, count: int) -> None:
    """Wait until ``count`` sessions wait, directly or through one another, on ``pid``;
    ``conn`` in autocommit (a transaction sees one snapshot of ``pg_stat_activity``)."""
    for _ in range(500):
        cursor = await conn.execute(
            "SELECT pid, pg_blocking_pids(pid) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
        )
        waits = {row[0]: set(row[1]) for row in await cursor.fetchall()}
        found = {pid}
        while grown := {w for w, on in waits.items() if on & found} - found:
            found |= grown
        if len(found) > count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{count} sessions never waited on {pid}: {waits}")


@pytest.mark.postgres
async def test_a_move_of_pending_deliveries_never_deadlocks_a_workers_outcome_write(
    open_storage: Any, postgres_url_and_schema: tuple[str, str]
) -> None:
    """``move_pending`` (a webhook PUT) locks the webhook's pending deliveries in id order
    while a worker writes the outcomes of a batch of the same ones (``update_leased``): the
    worker's statement locks them in id order too, whatever its plan, so one waits for the
    other. The batch's rows lie on disk in falling id order after many others, so that a
    join probing the table would lock them high ids first; a third session holds the middle
    one until both wait, then lets go: locked in two orders, they would deadlock here."""
    subject = await open_storage("postgres")
    storage, (url, schema) = subject.storage, postgres_url_and_schema
    api = PostgresStorage(url, schema=schema)  # the webhook PUT's process
    await api.open()
    hook, lease = uuid.uuid4(), T0 + timedelta(minutes=5)
    hosts = ("a.example.com:443", "b.example.com:443")
    rows = [
        Delivery(uuid.uuid4(), uuid.uuid4(), hook, ORG_A, T0, T0, lease_until=lease, host=hosts[0])
        for _ in range(60)
    ]
    rows.sort(key=lambda d: str(d.id), reverse=True)
    others = [
        Delivery(uuid.uuid4(), uuid.uuid4(), uuid.uuid4(), ORG_A, T0, T0, host=hosts[1])
        for _ in range(2000)
    ]
    try:
        async with storage.unit_of_work() as uow:
            await Deliveries(uow).add_many(others)
            await uow.commit()
        for d in rows:  # one after another: on disk in this order
            async with storage.unit_of_work() as uow:
                await Deliveries(uow).add(d)
                await uow.commit()
        options = f"-c search_path={schema}"
        async with (
            await psycopg.AsyncConnection.connect(url, options=options) as holder,
            await psycopg.AsyncConnection.connect(url, autocommit=True) as watcher,
        ):
            await holder.execute("ANALYZE deliveries")
            await holder.commit()
            middle = sorted(str(d.id) for d in rows)[len(rows) // 2]
            await holder.execute("SELECT 1 FROM deliveries WHERE id = %s FOR UPDATE", (middle,))

            async def move() -> int:
                async with api.unit_of_work() as uow:
                    moved = await Deliveries(uow).move_pending(hook, hosts[1])
                    await uow.commit()
                    return moved

            async def outcome() -> list[tuple[Delivery, datetime]]:
                async with storage.unit_of_work() as uow:
                    leased = [(d, lease) for d in rows]
                    written = await uow.repository(DELIVERIES).update_leased(leased)
                    await uow.commit()
                    return list(written)

            worker = asyncio.ensure_future(outcome())
            await _blocked_by(watcher, holder.info.backend_pid, 1)
            put = asyncio.ensure_future(move())
            await _blocked_by(watcher, holder.info.backend_pid, 2)
            await holder.commit()
            assert len(await worker) == len(rows)  # every outcome written, none rolled back
            assert await put == len(rows)
    finally:
        await api.close()
        await subject.close()
