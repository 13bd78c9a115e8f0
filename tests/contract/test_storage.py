"""The storage port's contract, run against every adapter (``store``: memory, sqlite, postgres).

The key property: for any records and any conditions, a list returns exactly the records
``domain.filtering.evaluate`` accepts, in (createdAt, id) order, whatever the adapter; and
paging through a list in any order (``Order``: any column, either way) visits every matching
record exactly once, in the order ``Order.key`` sorts them.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fourcorner.application.collections import (
    ALL,
    API_KEYS,
    DELIVERIES,
    EVENTS,
    MEMBERS,
    ORGANISATIONS,
    USERS,
)
from fourcorner.application.listing import condition
from fourcorner.application.storage import Collection, Cursor, Order, Query, unique_changed
from fourcorner.domain.api_key import ApiKey
from fourcorner.domain.errors import (
    ConcurrentChange,
    Conflict,
    InvalidCursor,
    NotAMember,
    NotFound,
)
from fourcorner.domain.filtering import Condition, Op
from fourcorner.domain.member import Member, MemberStatus
from fourcorner.domain.organisation import Contact, ContactType, Mode, Organisation, UserRef
from fourcorner.domain.roles import Role
from fourcorner.domain.text import text_problem
from fourcorner.domain.user import User
from fourcorner.domain.webhook import Attempt, Delivery, DeliveryStatus

if TYPE_CHECKING:  # fixtures' types; conftest modules are not imported by name
    from conftest import OpenStorage, Samples, StorageUnderTest

PROPERTY = settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
T0 = datetime(2026, 1, 2, 10, 0, tzinfo=UTC)
ORG_A = uuid.UUID(int=101)
ORG_B = uuid.UUID(int=102)


def org(key: str, name: str = "Acme", **changes: Any) -> Organisation:
    fields: dict[str, Any] = {
        "id": uuid.uuid4(),
        "legal_name": name,
        "country_code": "BE",
        "legal_identifier": key,
        "legal_identifier_code": "0208",
        "legal_key": f"0208:{key}",
        "created_at": T0,
        "created_by": UserRef("founder"),
        "last_modified_at": T0,
        "last_modified_by": UserRef("founder"),
        **changes,
    }
    return Organisation(**fields)


def member(org_id: uuid.UUID, user_ref: str, **changes: Any) -> Member:
    fields: dict[str, Any] = {
        "id": uuid.uuid4(),
        "org_id": org_id,
        "user_ref": user_ref,
        "role": Role.ORGMEMBER,
        "status": MemberStatus.ACTIVE,
        "created_at": T0,
        "created_by": UserRef(user_ref),
        "last_modified_at": T0,
        **changes,
    }
    return Member(**fields)


def api_key(key_hash: str, **changes: Any) -> ApiKey:
    fields: dict[str, Any] = {
        "id": uuid.uuid4(),
        "org_id": ORG_A,
        "name": "ci",
        "description": "",
        "expires": T0 + timedelta(days=30),
        "is_active": True,
        "role": Role.ORGMEMBER,
        "key_hash": key_hash,
        "prefix": "fck_abcd",
        "created_at": T0,
        "created_by": UserRef("founder"),
        "last_modified_at": T0,
        **changes,
    }
    return ApiKey(**fields)


# (collection, a record, another record clashing with it in a unique group, a third that
# clashes with neither)
UNIQUE_CASES = [
    pytest.param(ORGANISATIONS, org("1"), org("1", name="Other"), org("2"), id="organisations"),
    pytest.param(
        MEMBERS, member(ORG_A, "ann"), member(ORG_A, "ann"), member(ORG_B, "ann"), id="members"
    ),
    pytest.param(API_KEYS, api_key("h1"), api_key("h1"), api_key("h2"), id="api_keys"),
]


def sort_key(collection: Collection[Any], item: Any) -> tuple[str, str]:
    """List order: (createdAt, id) in stored form."""
    return (
        str(collection.columns["createdAt"].column(item)),
        str(collection.columns["id"].column(item)),
    )


async def add_all(store: StorageUnderTest, collection: Collection[Any], items: Any) -> None:
    async with store.unit_of_work() as uow:
        repo = uow.repository(collection)
        for item in items:
            await repo.add(item)
        await uow.commit()


async def stored(store: StorageUnderTest, collection: Collection[Any]) -> list[Any]:
    async with store.unit_of_work() as uow:
        return await uow.repository(collection).all()


async def walk(
    store: StorageUnderTest,
    collection: Collection[Any],
    *,
    where: tuple[Condition, ...] = (),
    search: str | None = None,
    limit: int = 100,
    order: Order | None = None,
) -> list[Any]:
    """Every page of a list, following the cursors; checks each page's size on the way."""
    order = order or Order()
    found: list[Any] = []
    after: Cursor | None = None
    async with store.unit_of_work() as uow:
        repo = uow.repository(collection)
        for _ in range(1000):
            query = Query(where=where, search=search, after=after, limit=limit, order=order)
            page = await repo.list(query)
            assert len(page.items) <= limit
            found.extend(page.items)
            if page.next_cursor is None:
                return found
            assert len(page.items) == limit
            after = Cursor.decode(page.next_cursor, order, collection.columns[order.field])
    raise AssertionError("the cursor never ended")


# --- round trip ------------------------------------------------------------------------------


@PROPERTY
@given(data=st.data())
async def test_every_field_of_every_record_type_round_trips(
    store: StorageUnderTest, samples: type[Samples], data: st.DataObject
) -> None:
    await store.reset()
    collection = data.draw(st.sampled_from(ALL), label="collection")
    item = data.draw(samples.records(collection), label="item")
    ident = collection.columns["id"].get(item)
    await add_all(store, collection, [item])
    async with store.unit_of_work() as uow:
        repo = uow.repository(collection)
        assert await repo.get(ident) == item
        assert await repo.all() == [item]
        assert await repo.first(id=ident) == item
        assert (await repo.list(Query())).items == [item]


async def some_stored(
    store: StorageUnderTest,
    samples: type[Samples],
    data: st.DataObject,
    collections: list[Collection[Any]],
) -> tuple[Collection[Any], Any, list[Any]]:
    """One of ``collections``, how its records' ids are read, and one to four of its records
    (any values, ids unique), stored in it alone."""
    await store.reset()
    collection = data.draw(st.sampled_from(collections), label="collection")
    ident = collection.columns["id"].get
    made = data.draw(
        st.lists(samples.records(collection), min_size=1, max_size=4, unique_by=ident),
        label="made",
    )
    await add_all(store, collection, made)
    return collection, ident, made


@PROPERTY
@given(data=st.data())
async def test_update_many_leaves_what_updates_one_by_one_leave(
    store: StorageUnderTest, samples: type[Samples], data: st.DataObject
) -> None:
    """Any record type, any values (NULLs, text, numbers, UUIDs, datetimes), an id given
    twice: the last of each id is what is stored, as after one ``update`` per item (the SQL
    adapters write a collection without unique groups in one statement, PostgreSQL any)."""
    collection, ident, made = await some_stored(
        store, samples, data, [c for c in ALL if not c.unique]
    )
    changes = data.draw(
        st.lists(
            st.tuples(st.sampled_from(made), samples.records(collection)), min_size=1, max_size=6
        ),
        label="changes",
    )
    changed = [
        attrs.evolve(new, **{_id_attribute(collection, new): ident(old)}) for old, new in changes
    ]
    async with store.unit_of_work() as uow:
        await uow.repository(collection).update_many(changed)
        await uow.commit()
    expected = {str(ident(x)): x for x in (*made, *changed)}
    got = await stored(store, collection)
    assert sorted(got, key=lambda x: str(ident(x))) == [expected[k] for k in sorted(expected)]


def _clash_guards(uow: Any) -> list[bool]:
    """The ``may_clash`` of each statement a SQL unit of work writes from now on, a put-off
    one (``write_later``) as False (none are recorded for another store)."""
    guarded: list[bool] = []
    write, later = getattr(uow, "write", None), getattr(uow, "write_later", None)
    if write is not None and later is not None:

        async def recorded(sql: str, params: Any, *, may_clash: bool) -> int:
            guarded.append(may_clash)
            return int(await write(sql, params, may_clash=may_clash))

        async def put_off(sql: str, params: Any) -> None:
            guarded.append(False)
            await later(sql, params)

        uow.write, uow.write_later = recorded, put_off
    return guarded


def _id_attribute(collection: Collection[Any], item: Any) -> str:
    """The attribute of ``item`` that holds the collection's ``id`` column."""
    value = collection.columns["id"].get(item)
    return next(a.name for a in attrs.fields(type(item)) if getattr(item, a.name) is value)


async def test_a_missing_record_is_none(store: StorageUnderTest) -> None:
    async with store.unit_of_work() as uow:
        assert await uow.repository(ORGANISATIONS).get(uuid.uuid4()) is None
        assert await uow.repository(USERS).get("nobody") is None
        assert await uow.repository(USERS).first(email="nobody@example.com") is None


async def test_an_id_no_record_can_have_finds_nothing(store: StorageUnderTest) -> None:
    """A UUID column (a PostgreSQL ``uuid``) looked up by text that is no UUID in canonical
    form: nothing, as text equal to no stored id finds nothing, never an error."""
    a = org("1")
    await add_all(store, ORGANISATIONS, [a])
    async with store.unit_of_work() as uow:
        repo = uow.repository(ORGANISATIONS)
        for ident in ("not-a-uuid", str(a.id).upper(), "", "\x01"):
            assert await repo.get(ident) is None
            assert await repo.first(id=ident) is None
            assert await repo.lock(ident) is None
            assert await repo.lock_many([ident]) == []
            assert not await repo.remove(ident)
        assert await repo.lock_many(["not-a-uuid", a.id]) == [a]
        assert await uow.repository(MEMBERS).all(orgId="not-a-uuid") == []
        await uow.commit()
    assert await stored(store, ORGANISATIONS) == [a]


# --- add, update, remove -------------------------------------------------------------------


async def test_adding_an_existing_id_conflicts_and_keeps_the_first(store: StorageUnderTest) -> None:
    first = org("1")
    await add_all(store, ORGANISATIONS, [first])
    async with store.unit_of_work() as uow:
        with pytest.raises(Conflict):
            await uow.repository(ORGANISATIONS).add(attrs.evolve(first, legal_key="0208:9"))
        await uow.commit()
    assert await stored(store, ORGANISATIONS) == [first]


@pytest.mark.parametrize(("collection", "a", "clash", "other"), UNIQUE_CASES)
async def test_a_unique_group_clash_conflicts_and_leaves_nothing(
    store: StorageUnderTest, collection: Collection[Any], a: Any, clash: Any, other: Any
) -> None:
    async with store.unit_of_work() as uow:
        repo = uow.repository(collection)
        await repo.add(a)
        with pytest.raises(Conflict):
            await repo.add(clash)  # a later write of the unit of work
        await repo.add(other)  # the unit of work carries on
        await uow.commit()
    assert await stored(store, collection) == sorted(
        [a, other], key=lambda i: sort_key(collection, i)
    )
    async with store.unit_of_work() as uow:
        repo = uow.repository(collection)
        with pytest.raises(Conflict):
            await repo.add(clash)  # the first write of the unit of work
        assert await repo.get(collection.columns["id"].get(clash)) is None
        assert await repo.count() == 2
        await uow.commit()
    assert len(await stored(store, collection)) == 2


async def test_update_replaces_the_record(store: StorageUnderTest) -> None:
    a, b = org("1"), org("2")
    await add_all(store, ORGANISATIONS, [a, b])
    changed = attrs.evolve(
        a,
        legal_name="Renamed",
        organisation_mode=Mode.SHARED,
        mode_change_request=Mode.WHITELABEL,
        contacts=(Contact(name="Bo", contact_type=ContactType.BUSINESS),),
        last_modified_at=T0 + timedelta(hours=1),
    )
    async with store.unit_of_work() as uow:
        await uow.repository(ORGANISATIONS).update(changed)
        await uow.commit()
    async with store.unit_of_work() as uow:
        repo = uow.repository(ORGANISATIONS)
        assert await repo.get(a.id) == changed
        assert await repo.get(b.id) == b
        assert await repo.first(legalName="Renamed") == changed
        assert await repo.first(legalName="Acme") == b
        assert await repo.count() == 2


async def test_update_many_replaces_every_record(store: StorageUnderTest) -> None:
    a, b, c = org("1"), org("2"), org("3")
    await add_all(store, ORGANISATIONS, [a, b, c])
    renamed = [attrs.evolve(x, legal_name=f"Renamed {i}") for i, x in enumerate((a, c))]
    async with store.unit_of_work() as uow:
        await uow.repository(ORGANISATIONS).update_many(renamed)
        await uow.commit()
    async with store.unit_of_work() as uow:
        repo = uow.repository(ORGANISATIONS)
        assert [await repo.get(x.id) for x in (a, b, c)] == [renamed[0], b, renamed[1]]
        assert await repo.first(legalName="Renamed 1") == renamed[1]


async def test_update_many_given_the_records_it_replaces(store: StorageUnderTest) -> None:
    """``before`` (the stored records, read under lock): an update keeping every unique
    column is written with no clash looked for, one record or several, and lands with the
    commit; one that changes a unique column still conflicts cleanly and the unit of work
    goes on."""
    a, b, c = org("1"), org("2"), org("3")
    await add_all(store, ORGANISATIONS, [a, b, c])
    async with store.unit_of_work() as uow:
        guarded = _clash_guards(uow)
        repo = uow.repository(ORGANISATIONS)
        locked = await repo.lock_many([a.id, c.id])
        renamed = [attrs.evolve(x, legal_name=f"Renamed {x.legal_identifier}") for x in locked]
        await repo.update_many(renamed, before=locked)
        (one,) = await repo.lock_many([b.id])
        await repo.update_many([attrs.evolve(one, legal_name="Alone")], before=[one])
        assert True not in guarded  # the SQL stores looked for no clash (a savepoint each)
        assert guarded or store.kind == "memory"  # and did write
        with pytest.raises(Conflict):
            await repo.update_many([attrs.evolve(one, legal_key=a.legal_key)], before=[one])
        await uow.commit()
    by_id = {x.id: x for x in await stored(store, ORGANISATIONS)}
    assert [by_id[x.id].legal_name for x in (a, b, c)] == ["Renamed 1", "Alone", "Renamed 3"]


async def test_update_many_of_a_collection_without_unique_groups(store: StorageUnderTest) -> None:
    """Such collections are written in one batch (executemany) by the SQL adapters."""
    event = uuid.uuid4()
    made = [
        Delivery(uuid.uuid4(), event, uuid.uuid4(), uuid.uuid4(), T0, T0 + timedelta(minutes=i))
        for i in range(5)
    ]
    await add_all(store, DELIVERIES, made)
    leased = [attrs.evolve(d, lease_until=T0 + timedelta(hours=1)) for d in made[1:4]]
    async with store.unit_of_work() as uow:
        await uow.repository(DELIVERIES).update_many(leased)
        await uow.commit()
    async with store.unit_of_work() as uow:
        got = [await uow.repository(DELIVERIES).get(d.id) for d in made]
    assert got == [made[0], *leased, made[4]]


async def test_a_lease_changes_its_field_alone_and_the_claims_see_it(
    store: StorageUnderTest,
) -> None:
    """``lease`` writes the lease column alone (the SQL adapters keep the record's copy in
    ``data`` as it was): every read and every claim sees the new lease, and a whole-record
    update afterwards replaces it."""
    event = uuid.uuid4()
    attempt = Attempt(1, T0, 12.5, status_code=500, response_body="busy")
    made = [
        Delivery(uuid.uuid4(), event, uuid.uuid4(), uuid.uuid4(), T0, T0, attempts=(attempt,))
        for _ in range(3)
    ]
    await add_all(store, DELIVERIES, made)
    until = T0 + timedelta(minutes=1)
    async with store.unit_of_work() as uow:
        repo = uow.repository(DELIVERIES)
        assert await repo.lease([made[0].id, made[2].id, uuid.uuid4()], until) == 2
        await uow.commit()
    leased = [attrs.evolve(made[i], lease_until=until) for i in (0, 2)]
    due = Query(
        where=(condition(DELIVERIES, "leaseUntil", Op.LT, T0 + timedelta(seconds=1)),), limit=10
    )
    async with store.unit_of_work() as uow:
        repo = uow.repository(DELIVERIES)
        assert [await repo.get(d.id) for d in made] == [leased[0], made[1], leased[1]]
        assert await repo.lock_many([d.id for d in made]) == sorted(
            [leased[0], made[1], leased[1]], key=lambda d: str(d.id)
        )
        assert await repo.claim(due) == [made[1]]
        await repo.update(attrs.evolve(leased[0], lease_until=T0))
        await uow.commit()
    async with store.unit_of_work() as uow:
        repo = uow.repository(DELIVERIES)
        assert await repo.get(made[0].id) == attrs.evolve(made[0], lease_until=T0)
        assert {d.id for d in await repo.claim(due)} == {made[0].id, made[1].id}


async def test_update_leased_writes_the_records_that_hold_the_lease_given(
    store: StorageUnderTest,
) -> None:
    """``update_leased``: each record written while it holds the lease given with it, in one
    statement (PostgreSQL) or one a record, and returned in id order; one leased anew, one
    removed and one never stored are left as they are. One item alone takes the same path."""
    event = uuid.uuid4()
    made = [
        Delivery(uuid.uuid4(), event, uuid.uuid4(), ORG_A, T0, T0, lease_until=T0) for _ in range(4)
    ]
    await add_all(store, DELIVERIES, made)
    claimed = T0 + timedelta(minutes=1)
    async with store.unit_of_work() as uow:
        repo = uow.repository(DELIVERIES)
        await repo.lease([d.id for d in made], claimed)
        await repo.lease([made[1].id], claimed + timedelta(seconds=1))  # claimed anew
        assert await repo.remove(made[3].id)
        await uow.commit()
    attempt = Attempt(1, T0, 12.5, status_code=204)
    done = [attrs.evolve(d, attempts=(attempt,), lease_until=T0) for d in made]
    never = attrs.evolve(done[0], id=uuid.uuid4())
    async with store.unit_of_work() as uow:
        repo = uow.repository(DELIVERIES)
        given = [(done[2], claimed), (never, claimed), (done[1], claimed), (done[0], claimed)]
        given.append((done[3], claimed))
        written = await repo.update_leased(given)
        assert written == sorted(
            [(done[0], claimed), (done[2], claimed)], key=lambda w: str(w[0].id)
        )
        await uow.commit()
    async with store.unit_of_work() as uow:
        repo = uow.repository(DELIVERIES)
        got = [await repo.get(d.id) for d in (*made, never)]
        assert got == [
            done[0],
            attrs.evolve(made[1], lease_until=claimed + timedelta(seconds=1)),
            done[2],
            None,
            None,
        ]
        # one item: written while it holds the lease, not after (its lease is T0 now)
        again = attrs.evolve(done[2], status=DeliveryStatus.DELIVERED)
        assert await repo.update_leased([(again, claimed)]) == []
        assert await repo.update_leased([(again, T0)]) == [(again, T0)]
        assert await repo.update_leased([]) == []
        await uow.commit()
    assert (await stored_one(store, again.id)) == again


async def stored_one(store: StorageUnderTest, ident: uuid.UUID) -> Any:
    async with store.unit_of_work() as uow:
        return await uow.repository(DELIVERIES).get(ident)


async def test_update_leased_is_not_for_a_collection_without_a_lease(
    store: StorageUnderTest,
) -> None:
    async with store.unit_of_work() as uow:
        with pytest.raises(ValueError, match="no lease"):
            await uow.repository(ORGANISATIONS).update_leased([(org("1"), T0)])


@PROPERTY
@given(data=st.data())
async def test_update_leased_writes_what_a_compare_and_set_of_each_lease_writes(
    store: StorageUnderTest, samples: type[Samples], data: st.DataObject
) -> None:
    """Any records of a collection with a lease, any values, any items given with the lease
    their record holds or another, an id given twice: a record is written when an item is
    given with the lease it held before the call (the last such item), and only then."""
    collection, ident, made = await some_stored(store, samples, data, [c for c in ALL if c.lease])
    lease = collection.lease_attribute
    changes = data.draw(
        st.lists(
            st.tuples(st.sampled_from(made), samples.records(collection), st.booleans()),
            min_size=1,
            max_size=6,
        ),
        label="changes",
    )
    given = [
        (
            attrs.evolve(new, **{_id_attribute(collection, new): ident(old)}),
            getattr(old, lease) + (timedelta(0) if same else timedelta(microseconds=1)),
        )
        for old, new, same in changes
    ]
    async with store.unit_of_work() as uow:
        written = await uow.repository(collection).update_leased(given)
        await uow.commit()
    held = {str(ident(x)): getattr(x, lease) for x in made}
    last = {(str(ident(item)), until): item for item, until in given}
    expected = sorted(
        [(item, until) for (key, until), item in last.items() if held[key] == until],
        key=lambda w: str(ident(w[0])),
    )
    assert written == expected
    now = {str(ident(x)): x for x in made} | {str(ident(item)): item for item, _ in expected}
    got = await stored(store, collection)
    assert sorted(got, key=lambda x: str(ident(x))) == [now[k] for k in sorted(now)]


@pytest.mark.parametrize("count", [1, 3])
async def test_update_leased_waits_for_a_claim_that_holds_the_record_and_then_writes_not(
    store: StorageUnderTest, count: int
) -> None:
    """A late outcome racing a claim of its deliveries: the claim holds them (and leases them
    anew) when the outcome's write comes; the write waits for it, then finds the new lease
    and writes nothing, one delivery or several (PostgreSQL: one statement)."""
    made = [
        Delivery(uuid.uuid4(), uuid.uuid4(), uuid.uuid4(), ORG_A, T0, T0, lease_until=T0)
        for _ in range(count)
    ]
    await add_all(store, DELIVERIES, made)
    anew = T0 + timedelta(minutes=5)
    holding = asyncio.Event()

    async def claim() -> None:
        async with store.unit_of_work() as uow:
            repo = uow.repository(DELIVERIES)
            assert len(await repo.lock_many([d.id for d in made])) == count
            holding.set()
            await asyncio.sleep(0.1)  # the late write comes meanwhile
            await repo.lease([d.id for d in made], anew)
            await uow.commit()

    async def late() -> list[Any]:
        await holding.wait()
        async with store.unit_of_work() as uow:
            failed = [
                attrs.evolve(d, attempts=(Attempt(1, T0, 1.0, status_code=500),)) for d in made
            ]
            written = await uow.repository(DELIVERIES).update_leased([(d, T0) for d in failed])
            await uow.commit()
            return written

    async with asyncio.timeout(10):
        _, written = await asyncio.gather(claim(), late())
    assert written == []
    got = sorted(await stored(store, DELIVERIES), key=lambda d: str(d.id))
    assert got == sorted([attrs.evolve(d, lease_until=anew) for d in made], key=lambda d: str(d.id))


async def test_a_lease_without_a_commit_changes_nothing(store: StorageUnderTest) -> None:
    made = Delivery(uuid.uuid4(), uuid.uuid4(), uuid.uuid4(), uuid.uuid4(), T0, T0)
    await add_all(store, DELIVERIES, [made])
    async with store.unit_of_work() as uow:
        await uow.repository(DELIVERIES).lease([made.id], T0 + timedelta(hours=1))
    assert await stored(store, DELIVERIES) == [made]


async def test_update_many_without_a_commit_changes_nothing(store: StorageUnderTest) -> None:
    a = org("1")
    await add_all(store, ORGANISATIONS, [a])
    async with store.unit_of_work() as uow:
        await uow.repository(ORGANISATIONS).update_many([attrs.evolve(a, legal_name="Gone")])
    async with store.unit_of_work() as uow:
        assert await uow.repository(ORGANISATIONS).get(a.id) == a


async def test_an_update_onto_a_unique_group_conflicts_and_the_unit_carries_on(
    store: StorageUnderTest,
) -> None:
    a, b = org("1"), org("2")
    await add_all(store, ORGANISATIONS, [a, b])
    async with store.unit_of_work() as uow:
        repo = uow.repository(ORGANISATIONS)
        with pytest.raises(Conflict):
            await repo.update(attrs.evolve(b, legal_key=a.legal_key))  # the first write
        await repo.update(attrs.evolve(b, legal_name="First"))
        with pytest.raises(Conflict):
            await repo.update(attrs.evolve(b, legal_key=a.legal_key))  # a later write
        await repo.update(attrs.evolve(a, legal_name="Second"))
        await uow.commit()
    assert await stored(store, ORGANISATIONS) == sorted(
        [attrs.evolve(a, legal_name="Second"), attrs.evolve(b, legal_name="First")],
        key=lambda i: sort_key(ORGANISATIONS, i),
    )


async def test_update_many_onto_a_unique_group_conflicts_as_update_does(
    store: StorageUnderTest,
) -> None:
    """A batch of a collection with unique groups (one statement in PostgreSQL): a clash is a
    ``Conflict`` naming the group, as one ``update`` of that record names it, whether the
    batch is the first write of a unit of work or a later one; rolled back, nothing changed."""
    a, b, c = org("1"), org("2"), org("3")
    await add_all(store, ORGANISATIONS, [a, b, c])
    clashing = [attrs.evolve(c, legal_name="Lost"), attrs.evolve(b, legal_key=a.legal_key)]
    async with store.unit_of_work() as uow:
        with pytest.raises(Conflict) as one:
            await uow.repository(ORGANISATIONS).update(clashing[1])
    async with store.unit_of_work() as uow:
        with pytest.raises(Conflict) as first:
            await uow.repository(ORGANISATIONS).update_many(clashing)
    async with store.unit_of_work() as uow:
        await uow.repository(ORGANISATIONS).update(attrs.evolve(b, legal_name="First"))
        with pytest.raises(Conflict) as later:
            await uow.repository(ORGANISATIONS).update_many(clashing)
    assert first.value.message() == later.value.message() == one.value.message()
    assert "legal" in first.value.message()
    assert await stored(store, ORGANISATIONS) == sorted(
        [a, b, c], key=lambda i: sort_key(ORGANISATIONS, i)
    )


async def test_an_update_of_a_missing_id_is_not_found_and_stores_nothing(
    store: StorageUnderTest,
) -> None:
    """An update never inserts: as the first write of a unit of work or a later one, the
    unit carries on and what it commits holds no trace of the missing record."""
    a, b, missing = org("1"), org("2"), org("3")
    await add_all(store, ORGANISATIONS, [a])
    async with store.unit_of_work() as uow:
        repo = uow.repository(ORGANISATIONS)
        with pytest.raises(NotFound) as first:
            await repo.update(missing)
        assert first.value.ident == str(missing.id)
        await repo.add(b)
        with pytest.raises(NotFound):
            await repo.update(missing)
        await repo.update(attrs.evolve(a, legal_name="Kept"))
        await uow.commit()
    assert await stored(store, ORGANISATIONS) == sorted(
        [attrs.evolve(a, legal_name="Kept"), b], key=lambda i: sort_key(ORGANISATIONS, i)
    )


async def test_an_update_after_a_remove_in_the_same_unit_is_not_found(
    store: StorageUnderTest,
) -> None:
    a = org("1")
    await add_all(store, ORGANISATIONS, [a])
    async with store.unit_of_work() as uow:
        repo = uow.repository(ORGANISATIONS)
        assert await repo.remove(a.id) is True
        with pytest.raises(NotFound):
            await repo.update(attrs.evolve(a, legal_name="Back"))
        await uow.commit()
    assert await stored(store, ORGANISATIONS) == []


async def test_an_update_racing_a_remove_never_brings_the_record_back(
    store: StorageUnderTest,
) -> None:
    """One unit of work removes a record and commits a moment later; another updates it
    meanwhile (PostgreSQL: the update waits for the remover's row lock, then finds nothing;
    memory and SQLite: it waits for the remover's unit of work)."""

    async def race(a: Organisation) -> None:
        removed = asyncio.Event()

        async def remove() -> None:
            async with store.unit_of_work() as uow:
                assert await uow.repository(ORGANISATIONS).remove(a.id) is True
                removed.set()
                await asyncio.sleep(0.01)  # the update is sent meanwhile
                await uow.commit()

        async def update() -> None:
            await removed.wait()
            async with store.unit_of_work() as uow:
                with pytest.raises(NotFound):
                    await uow.repository(ORGANISATIONS).update(attrs.evolve(a, legal_name="Back"))
                await uow.commit()

        async with asyncio.timeout(10):
            await asyncio.gather(remove(), update())

    for round_ in range(20):
        a = org(str(round_), name="")
        await add_all(store, ORGANISATIONS, [a])
        await race(a)
        assert await stored(store, ORGANISATIONS) == [], round_


@pytest.mark.parametrize("collection", [ORGANISATIONS, DELIVERIES], ids=lambda c: c.name)
async def test_update_many_with_a_missing_record_names_it_and_stores_it_not(
    store: StorageUnderTest, collection: Collection[Any]
) -> None:
    """Both ways of the SQL adapters: one statement per record (SQLite, a collection with
    unique groups) and one batch (without; PostgreSQL, with or without)."""
    if collection is DELIVERIES:
        event = uuid.uuid4()
        made: list[Any] = [
            Delivery(uuid.uuid4(), event, uuid.uuid4(), uuid.uuid4(), T0, T0 + timedelta(minutes=i))
            for i in range(3)
        ]
        change: dict[str, Any] = {"lease_until": T0 + timedelta(hours=1)}
    else:
        made = [org(str(i)) for i in range(3)]
        change = {"legal_name": "Changed"}
    kept, missing = made[:2], made[2]
    await add_all(store, collection, kept)
    async with store.unit_of_work() as uow:
        repo = uow.repository(collection)
        with pytest.raises(NotFound) as raised:
            await repo.update_many([attrs.evolve(x, **change) for x in (kept[0], missing)])
        assert raised.value.ident == str(missing.id)
        await uow.commit()
    ids = {str(x.id) for x in await stored(store, collection)}
    assert ids == {str(x.id) for x in kept}


async def test_remove(store: StorageUnderTest) -> None:
    a, b = org("1"), org("2")
    await add_all(store, ORGANISATIONS, [a, b])
    async with store.unit_of_work() as uow:
        repo = uow.repository(ORGANISATIONS)
        assert await repo.remove(a.id) is True
        assert await repo.get(a.id) is None
        assert await repo.remove(a.id) is False
        assert await repo.remove(str(uuid.uuid4())) is False
        await uow.commit()
    assert await stored(store, ORGANISATIONS) == [b]
    await add_all(store, ORGANISATIONS, [a])  # its id and legal key are free again
    assert len(await stored(store, ORGANISATIONS)) == 2


async def test_first_all_and_count_look_up_equal_columns(store: StorageUnderTest) -> None:
    m1 = member(ORG_A, "ann", created_at=T0 + timedelta(seconds=2))
    m2 = member(ORG_A, "bob", status=MemberStatus.PENDING, created_at=T0)
    m3 = member(ORG_B, "ann", created_at=T0 + timedelta(seconds=1))
    k1 = api_key("h1", is_active=False)
    k2 = api_key("h2", created_at=T0 + timedelta(seconds=1))
    await add_all(store, MEMBERS, [m1, m2, m3])
    await add_all(store, API_KEYS, [k1, k2])
    async with store.unit_of_work() as uow:
        members = uow.repository(MEMBERS)
        assert await members.all(orgId=ORG_A) == [m2, m1]
        assert await members.all(orgId=str(ORG_A)) == [m2, m1]
        assert await members.first(orgId=ORG_A) == m2
        assert await members.all(userRef="ann") == [m3, m1]
        assert await members.first(orgId=ORG_B, userRef="ann") == m3
        assert await members.all(status=MemberStatus.ACTIVE) == [m3, m1]
        assert await members.all(status="PENDING") == [m2]
        assert await members.count(orgId=ORG_A) == 2
        assert await members.count() == 3
        assert await members.all(createdAt=T0) == [m2]
        assert await members.first(userRef="cid") is None
        assert await members.count(userRef=None) == 0  # NULL equals nothing
        assert await members.all() == [m2, m3, m1]
        with pytest.raises(KeyError):
            await members.all(nickname="x")
        keys = uow.repository(API_KEYS)
        assert await keys.all(isActive=True) == [k2]
        assert await keys.all(isActive=False) == [k1]
        assert await keys.first(keyHash="h2") == k2


# --- units of work ---------------------------------------------------------------------------


async def test_an_exception_inside_the_unit_rolls_back(store: StorageUnderTest) -> None:
    with pytest.raises(RuntimeError):
        async with store.unit_of_work() as uow:
            await uow.repository(ORGANISATIONS).add(org("1"))
            raise RuntimeError("boom")
    assert await stored(store, ORGANISATIONS) == []


async def test_leaving_without_commit_rolls_back(store: StorageUnderTest) -> None:
    a = org("1")
    async with store.unit_of_work() as uow:
        await uow.repository(ORGANISATIONS).add(a)
        assert await uow.repository(ORGANISATIONS).get(a.id) == a  # seen inside the unit
    assert await stored(store, ORGANISATIONS) == []
    async with store.unit_of_work() as uow:
        await uow.repository(ORGANISATIONS).add(a)
        await uow.rollback()
        b = org("2")
        await uow.repository(ORGANISATIONS).add(b)
        await uow.commit()
    assert await stored(store, ORGANISATIONS) == [b]


async def test_a_commit_is_seen_by_the_next_unit_and_later_writes_need_their_own(
    store: StorageUnderTest,
) -> None:
    a, b = org("1"), org("2")
    async with store.unit_of_work() as uow:
        await uow.repository(ORGANISATIONS).add(a)
        await uow.commit()
        await uow.repository(ORGANISATIONS).add(b)  # never committed
    async with store.unit_of_work() as uow:
        repo = uow.repository(ORGANISATIONS)
        assert await repo.get(a.id) == a
        assert await repo.get(b.id) is None


async def test_concurrent_writers_all_land(store: StorageUnderTest) -> None:
    items = [org(str(i)) for i in range(20)]

    async def write(item: Organisation) -> None:
        async with store.unit_of_work() as uow:
            await uow.repository(ORGANISATIONS).add(item)
            await asyncio.sleep(0)
            await uow.commit()

    await asyncio.gather(*(write(i) for i in items))
    assert await stored(store, ORGANISATIONS) == sorted(
        items, key=lambda i: sort_key(ORGANISATIONS, i)
    )


async def test_of_racing_adds_on_one_unique_key_exactly_one_wins(store: StorageUnderTest) -> None:
    racers = [org("same", name=f"racer {i}") for i in range(10)]

    async def race(item: Organisation) -> bool:
        try:
            async with store.unit_of_work() as uow:
                await uow.repository(ORGANISATIONS).add(item)
                await asyncio.sleep(0.001)
                await uow.commit()
        except Conflict:
            return False
        return True

    outcomes = await asyncio.gather(*(race(r) for r in racers))
    assert outcomes.count(True) == 1
    winner = racers[outcomes.index(True)]
    assert await stored(store, ORGANISATIONS) == [winner]


# --- lists -----------------------------------------------------------------------------------


async def test_pages_follow_created_at_then_id_without_gaps_or_repeats(
    store: StorageUnderTest,
) -> None:
    times = [T0, T0 + timedelta(microseconds=1), T0 - timedelta(days=1)]
    items = [org(str(i), created_at=times[i % 3]) for i in range(13)]
    await add_all(store, ORGANISATIONS, items)
    expected = sorted(items, key=lambda i: sort_key(ORGANISATIONS, i))
    for limit in (1, 4, 13, 20):
        assert await walk(store, ORGANISATIONS, limit=limit) == expected


async def test_search_is_a_case_insensitive_substring_of_the_search_fields(
    store: StorageUnderTest,
) -> None:
    a = org("111", name="Acme Corp")
    b = org("222", name="Beta", short_name="ACMEish")
    c = org("acme-333", name="Gamma")
    d = org("444", name="Ézé")
    await add_all(store, ORGANISATIONS, [a, b, c, d])
    by_id = lambda items: sorted(str(i.id) for i in items)  # noqa: E731
    assert by_id(await walk(store, ORGANISATIONS, search="aCmE")) == by_id([a, b, c])
    assert by_id(await walk(store, ORGANISATIONS, search="CORP")) == by_id([a])
    assert by_id(await walk(store, ORGANISATIONS, search="éZÉ")) == by_id([d])
    assert await walk(store, ORGANISATIONS, search="absent") == []


# event payloads with the keys search reads, and others, holding any JSON value
_PAYLOAD_TEXT = st.sampled_from(("0088:ABC", "É", "ß", "tx-1", "")) | st.text(
    st.characters(codec="utf-8").filter(lambda c: text_problem(c) is None), max_size=6
)
_PAYLOAD_VALUE = _PAYLOAD_TEXT | st.integers(-5, 5) | st.booleans() | st.none()
PAYLOADS = st.dictionaries(
    st.sampled_from(("transactionId", "id", "senderId", "receiverId", "message")),
    _PAYLOAD_VALUE | st.lists(_PAYLOAD_VALUE, max_size=2),
    max_size=5,
)


def _storable_together(collection: Collection[Any], items: list[Any]) -> list[Any]:
    """``items`` less each that clashes with an earlier one in a unique group (a NULL clashes
    with nothing)."""
    seen: set[tuple[Any, ...]] = set()
    kept = []
    for item in items:
        keys = {
            (group, tuple(collection.columns[c].column(item) for c in group))
            for group in collection.unique
        }
        keys = {k for k in keys if None not in k[1]}
        if not keys & seen:
            seen |= keys
            kept.append(item)
    return kept


@settings(PROPERTY, max_examples=25)  # two collections an example
@given(data=st.data())
async def test_search_of_events_and_members_looks_in_payloads_and_emails_of_one_org(
    store: StorageUnderTest, samples: type[Samples], data: st.DataObject
) -> None:
    """An event is found by its payload's transaction and participants, a member by their
    email, as ``Collection.search_text`` says, on every adapter; and only in the list of the
    record's own organisation."""
    await store.reset()
    orgs = st.sampled_from((ORG_A, ORG_B))
    for collection, field, values in (
        (EVENTS, "payload", PAYLOADS),
        (MEMBERS, "email", _PAYLOAD_TEXT),
    ):
        records = data.draw(samples.record_lists(collection, min_size=1, max_size=6))
        changed = [
            attrs.evolve(r, org_id=data.draw(orgs), **{field: data.draw(values)}) for r in records
        ]
        items = _storable_together(collection, changed)
        await add_all(store, collection, items)
        search = data.draw(samples.needles(collection, items).filter(bool), label="search")
        for org_id in (ORG_A, ORG_B):
            expected = [
                i
                for i in sorted(items, key=lambda i: sort_key(collection, i))
                if i.org_id == org_id and search.lower() in collection.search_text(i)
            ]
            scope = (condition(collection, "orgId", Op.EQ, org_id),)
            assert await walk(store, collection, where=scope, search=search) == expected


async def test_text_compares_in_code_point_order(store: StorageUnderTest) -> None:
    names = ["a", "Z", "é", "ä", "😀", "中", "~", "ab", ""]
    items = [org(str(i), name=n) for i, n in enumerate(names)]
    await add_all(store, ORGANISATIONS, items)
    spec = ORGANISATIONS.columns["legalName"]
    for op in (Op.LT, Op.GTE):
        condition = Condition(spec, op, "é", "é")
        got = await walk(store, ORGANISATIONS, where=(condition,))
        assert sorted(i.legal_name for i in got) == sorted(
            n for n in names if (n < "é" if op is Op.LT else n >= "é")
        )


@PROPERTY
@given(data=st.data())
async def test_a_list_returns_exactly_what_evaluate_accepts(
    store: StorageUnderTest, samples: type[Samples], data: st.DataObject
) -> None:
    await store.reset()
    collection = data.draw(st.sampled_from(ALL), label="collection")
    items = data.draw(samples.record_lists(collection, min_size=1, max_size=8), label="items")
    await add_all(store, collection, items)
    where = tuple(
        data.draw(st.lists(samples.conditions(collection, items), max_size=2), label="where")
    )
    search = data.draw(samples.needles(collection, items), label="search")
    limit = data.draw(st.integers(1, 4), label="limit")
    expected = [
        i
        for i in sorted(items, key=lambda i: sort_key(collection, i))
        if all(c.matches(i) for c in where)
        and (not search or search.lower() in collection.search_text(i))
    ]
    assert await walk(store, collection, where=where, search=search, limit=limit) == expected


def reference_order(collection: Collection[Any], items: Any, order: Order) -> list[Any]:
    """``items`` as ``order`` sorts them: the column in stored form (NULL first), then id."""
    column, ident = collection.columns[order.field], collection.columns["id"]
    return sorted(
        items,
        key=lambda i: order.key(column.column(i), str(ident.column(i))),
        reverse=order.descending,
    )


@PROPERTY
@given(data=st.data())
async def test_paging_in_any_order_visits_every_match_once_in_reference_order(
    store: StorageUnderTest, samples: type[Samples], data: st.DataObject
) -> None:
    await store.reset()
    collection = data.draw(st.sampled_from(ALL), label="collection")
    items = data.draw(samples.record_lists(collection, min_size=1, max_size=9), label="items")
    await add_all(store, collection, items)
    where = tuple(
        data.draw(st.lists(samples.conditions(collection, items), max_size=1), label="where")
    )
    order = Order(
        data.draw(st.sampled_from(sorted(collection.columns)), label="sort"),
        data.draw(st.booleans(), label="descending"),
    )
    limit = data.draw(st.integers(1, 4), label="limit")
    expected = reference_order(
        collection, [i for i in items if all(c.matches(i) for c in where)], order
    )
    assert await walk(store, collection, where=where, limit=limit, order=order) == expected


async def test_sorting_by_a_column_with_nulls_and_equal_values_pages_exactly(
    store: StorageUnderTest,
) -> None:
    """Mode change requests: NULL on some, equal on others; every limit, both directions."""
    modes = [None, Mode.SHARED, None, Mode.DEMO, Mode.SHARED, Mode.SHARED, None, Mode.WHITELABEL]
    items = [org(str(i), mode_change_request=m) for i, m in enumerate(modes)]
    await add_all(store, ORGANISATIONS, items)
    for descending in (False, True):
        order = Order("modeChangeRequest", descending)
        expected = reference_order(ORGANISATIONS, items, order)
        assert [i.mode_change_request for i in expected][:3] == (
            [Mode.WHITELABEL, Mode.SHARED, Mode.SHARED] if descending else [None, None, None]
        )
        assert expected[-1].mode_change_request is (None if descending else Mode.WHITELABEL)
        for limit in (1, 2, 3, 9, 10):
            assert await walk(store, ORGANISATIONS, limit=limit, order=order) == expected


async def test_a_cursor_of_another_order_is_refused(store: StorageUnderTest) -> None:
    await add_all(store, ORGANISATIONS, [org(str(i)) for i in range(3)])
    async with store.unit_of_work() as uow:
        repo = uow.repository(ORGANISATIONS)
        page = await repo.list(Query(limit=1, order=Order("legalName")))
        assert page.next_cursor is not None
        cursor = Cursor.decode(page.next_cursor)
        with pytest.raises(InvalidCursor):
            await repo.list(Query(limit=1, after=cursor, order=Order("legalName", True)))
        with pytest.raises(InvalidCursor):
            Cursor.decode(page.next_cursor, Order())


# --- life cycle ------------------------------------------------------------------------------


async def test_ping_and_reopen(store: StorageUnderTest) -> None:
    a = org("1")
    await add_all(store, ORGANISATIONS, [a])
    await store.storage.ping()
    await store.storage.close()
    await store.storage.open()
    await store.storage.ping()
    assert await stored(store, ORGANISATIONS) == [a]


async def test_users_keep_string_ids(store: StorageUnderTest) -> None:
    u = User(
        id="auth0|123",
        email="ann@example.com",
        created_at=T0,
        created_by=UserRef("auth0|123"),
        last_modified_at=T0,
        last_modified_by=UserRef("auth0|123"),
        terms_accepted_at=T0,
    )
    await add_all(store, USERS, [u])
    async with store.unit_of_work() as uow:
        assert await uow.repository(USERS).get("auth0|123") == u
        assert await uow.repository(USERS).first(email="ann@example.com") == u


# --- locking reads ---------------------------------------------------------------------------


async def test_lock_reads_the_record(store: StorageUnderTest) -> None:
    a = org("1")
    await add_all(store, ORGANISATIONS, [a])
    async with store.unit_of_work() as uow:
        repo = uow.repository(ORGANISATIONS)
        assert await repo.lock(a.id) == a
        assert await repo.lock(uuid.uuid4()) is None


async def test_lock_many_reads_the_records_in_id_order(store: StorageUnderTest) -> None:
    items = [org(str(i)) for i in range(4)]
    await add_all(store, ORGANISATIONS, items)
    wanted = [items[2].id, uuid.uuid4(), items[0].id, items[3].id, items[0].id]
    async with store.unit_of_work() as uow:
        repo = uow.repository(ORGANISATIONS)
        found = await repo.lock_many(wanted)
        assert await repo.lock_many([]) == []
    expected = sorted((items[0], items[2], items[3]), key=lambda o: str(o.id))
    assert found == expected


async def test_lock_many_holds_records_against_other_writers(store: StorageUnderTest) -> None:
    """Two units of work each add a letter to the same records under ``lock_many``,
    asking for them in opposite orders: no update is lost and neither deadlocks."""
    items = [org(str(i), name="") for i in range(3)]
    await add_all(store, ORGANISATIONS, items)
    ids = [o.id for o in items]
    locked = asyncio.Event()

    async def append(letter: str, order: list[uuid.UUID], *, first: bool) -> None:
        if not first:
            await locked.wait()
        async with store.unit_of_work() as uow:
            repo = uow.repository(ORGANISATIONS)
            current = await repo.lock_many(order)
            if first:
                locked.set()
                await asyncio.sleep(0.05)  # the other writer asks for the locks meanwhile
            await repo.update_many(
                [attrs.evolve(o, legal_name=o.legal_name + letter) for o in current]
            )
            await uow.commit()

    async with asyncio.timeout(10):
        await asyncio.gather(append("A", ids, first=True), append("B", ids[::-1], first=False))
    assert [o.legal_name for o in await stored(store, ORGANISATIONS)] == ["AB"] * 3


@pytest.mark.postgres
async def test_a_deadlock_is_a_concurrent_change_and_the_other_unit_commits(
    open_storage: OpenStorage, caplog: pytest.LogCaptureFixture
) -> None:
    """Two units of work lock two records in opposite orders: PostgreSQL breaks the deadlock
    by failing one, which raises ``ConcurrentChange`` (503 ``AT-1507``, not "the database
    cannot be reached") and is logged as ``storage.conflict``; the other commits, and the
    storage serves the next units of work."""
    subject = await open_storage("postgres")
    try:
        a, b = org("1", name=""), org("2", name="")
        await add_all(subject, ORGANISATIONS, [a, b])
        both = asyncio.Barrier(2)

        async def cross(letter: str, first: Organisation, then: Organisation) -> str:
            try:
                async with subject.unit_of_work() as uow:
                    repo = uow.repository(ORGANISATIONS)
                    held = await repo.lock(first.id)
                    assert held is not None
                    await repo.update(attrs.evolve(held, legal_name=letter))
                    await both.wait()  # each holds one: each now asks for the other's
                    other = await repo.lock(then.id)
                    assert other is not None
                    await repo.update(attrs.evolve(other, legal_name=letter))
                    await uow.commit()
            except ConcurrentChange as e:
                return e.message()
            return "committed"

        with caplog.at_level(logging.WARNING, logger="fourcorner.storage"):
            async with asyncio.timeout(30):
                outcomes = await asyncio.gather(cross("A", a, b), cross("B", b, a))
        assert outcomes.count("committed") == 1, outcomes
        [refused] = [o for o in outcomes if o != "committed"]
        assert "conflicted" in refused and "cannot be reached" not in refused
        won = "AB"[outcomes.index("committed")]
        assert [o.legal_name for o in await stored(subject, ORGANISATIONS)] == [won, won]
        logged = [r for r in caplog.records if getattr(r, "event", "") == "storage.conflict"]
        assert [r.sqlstate for r in logged] == ["40P01"]  # type: ignore[attr-defined]
        for _ in range(3):
            assert len(await stored(subject, ORGANISATIONS)) == 2
    finally:
        await subject.close()


async def test_read_modify_write_under_lock_loses_no_update(store: StorageUnderTest) -> None:
    a = org("1", name="")
    await add_all(store, ORGANISATIONS, [a])
    locked = asyncio.Event()

    async def append(letter: str, *, first: bool) -> None:
        if not first:
            await locked.wait()
        async with store.unit_of_work() as uow:
            repo = uow.repository(ORGANISATIONS)
            current = await repo.lock(a.id)
            assert current is not None
            if first:
                locked.set()
                await asyncio.sleep(0.05)  # the other writer asks for the lock meanwhile
            await repo.update(attrs.evolve(current, legal_name=current.legal_name + letter))
            await uow.commit()

    await asyncio.gather(append("A", first=True), append("B", first=False))
    assert [o.legal_name for o in await stored(store, ORGANISATIONS)] == ["AB"]


async def test_replace_stores_the_record_only_while_it_is_the_one_given(
    store: StorageUnderTest,
) -> None:
    a, b = org("1"), org("2")
    await add_all(store, ORGANISATIONS, [a, b])
    first = attrs.evolve(a, legal_name="First")
    async with store.unit_of_work() as uow:
        assert await uow.repository(ORGANISATIONS).replace(a, first)
        await uow.commit()
    async with store.unit_of_work() as uow:
        repo = uow.repository(ORGANISATIONS)
        assert not await repo.replace(a, attrs.evolve(a, legal_name="Stale"))  # a is gone
        assert await repo.get(a.id) == first
        with pytest.raises(Conflict):
            await repo.replace(first, attrs.evolve(first, legal_key=b.legal_key))
        assert await repo.replace(first, attrs.evolve(first, legal_name="Second"))
        # not committed: nothing changed
    async with store.unit_of_work() as uow:
        await uow.repository(ORGANISATIONS).remove(b.id)
        await uow.commit()
    async with store.unit_of_work() as uow:
        assert not await uow.repository(ORGANISATIONS).replace(b, attrs.evolve(b, legal_name="X"))
        await uow.commit()
    assert await stored(store, ORGANISATIONS) == [first]


@given(
    st.sampled_from(["1", "2"]),
    st.sampled_from(["1", "2"]),
    st.sampled_from(["A", "B"]),
    st.sampled_from(["x@y.test", "z@y.test"]),
    st.sampled_from(["x@y.test", "z@y.test"]),
)
def test_unique_changed_is_a_change_of_a_unique_group_column(
    key: str, other_key: str, name: str, email: str, other_email: str
) -> None:
    """``replace`` guards only a change of a unique group's column against a clash: the
    stored record holds the others already."""
    before = org(key)
    after = attrs.evolve(before, legal_key=org(other_key).legal_key, legal_name=name)
    assert unique_changed(ORGANISATIONS, before, after) is (key != other_key)
    mine = member(before.id, "", status=MemberStatus.INVITED, email=email)
    theirs = attrs.evolve(mine, email=other_email, role=Role.ORGADMIN)
    assert unique_changed(MEMBERS, mine, theirs) is (email != other_email)


async def test_replace_is_not_for_a_collection_with_a_lease(store: StorageUnderTest) -> None:
    made = Delivery(uuid.uuid4(), uuid.uuid4(), uuid.uuid4(), uuid.uuid4(), T0, T0)
    await add_all(store, DELIVERIES, [made])
    async with store.unit_of_work() as uow:
        with pytest.raises(ValueError, match="lease"):
            await uow.repository(DELIVERIES).replace(
                made, attrs.evolve(made, lease_until=T0 + timedelta(minutes=1))
            )


async def test_racing_replaces_lose_no_update(store: StorageUnderTest) -> None:
    """Writers each read the record unlocked and replace it, reading again when it changed
    meanwhile, round after round: every write lands once (compare-and-set)."""
    a = org("1", name="")
    await add_all(store, ORGANISATIONS, [a])
    writers, rounds = 6, 25

    async def append(letter: str) -> int:
        misses = 0
        for _ in range(rounds):
            while True:
                async with store.unit_of_work() as uow:
                    repo = uow.repository(ORGANISATIONS)
                    current = await repo.get(a.id)
                    assert current is not None
                    await asyncio.sleep(0)  # the others write meanwhile
                    after = attrs.evolve(current, legal_name=current.legal_name + letter)
                    if await repo.replace(current, after):
                        await uow.commit()
                        break
                misses += 1
        return misses

    async with asyncio.timeout(60):
        await asyncio.gather(*(append(chr(ord("A") + i)) for i in range(writers)))
    (final,) = await stored(store, ORGANISATIONS)
    assert sorted(final.legal_name) == sorted(
        chr(ord("A") + i) for i in range(writers) for _ in range(rounds)
    )


async def test_claims_at_the_same_time_get_different_records(store: StorageUnderTest) -> None:
    items = [org(str(i), name="free", created_at=T0 + timedelta(seconds=i)) for i in range(4)]
    await add_all(store, ORGANISATIONS, items)
    free = (Condition(ORGANISATIONS.columns["legalName"], Op.EQ, "free", "free"),)
    claimed = asyncio.Event()

    async def claim(*, first: bool) -> list[uuid.UUID]:
        if not first:
            await claimed.wait()
        async with store.unit_of_work() as uow:
            repo = uow.repository(ORGANISATIONS)
            mine = await repo.claim(Query(where=free, limit=2))
            if first:
                claimed.set()
                await asyncio.sleep(0.05)  # the other claims meanwhile
            for item in mine:
                await repo.update(attrs.evolve(item, legal_name="taken"))
            await uow.commit()
            return [i.id for i in mine]

    first, second = await asyncio.gather(claim(first=True), claim(first=False))
    assert first == [items[0].id, items[1].id]
    assert sorted(first + second) == sorted(i.id for i in items)


async def test_a_claim_that_finds_nothing_begins_no_transaction(
    store: StorageUnderTest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Most claims of a polling worker find nothing: on PostgreSQL such a claim is one plain
    read, without the BEGIN (and the ROLLBACK) that its locking read would need; a claim that
    finds records still takes them under lock, in a transaction, and the claim after it goes
    to its locking read at once (while there is a backlog, the plain read would be one
    statement more)."""
    if store.kind != "postgres":
        pytest.skip("a PostgreSQL unit of work's statements")
    import psycopg

    sent: list[str] = []
    execute = psycopg.AsyncConnection.execute

    async def recorded(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(str(query))
        return await execute(self, query, *args, **kwargs)

    free = (Condition(ORGANISATIONS.columns["legalName"], Op.EQ, "free", "free"),)
    async with store.unit_of_work() as uow:  # whatever claims before found, this finds none
        assert await uow.repository(ORGANISATIONS).claim(Query(where=free, limit=2)) == []
    monkeypatch.setattr(psycopg.AsyncConnection, "execute", recorded)
    async with store.unit_of_work() as uow:
        assert await uow.repository(ORGANISATIONS).claim(Query(where=free, limit=2)) == []
        await uow.commit()
    assert len(sent) == 1
    assert "FOR UPDATE" not in sent[0]
    item = org("1", name="free")
    await add_all(store, ORGANISATIONS, [item])
    sent.clear()
    async with store.unit_of_work() as uow:
        assert await uow.repository(ORGANISATIONS).claim(Query(where=free, limit=2)) == [item]
        await uow.commit()
    assert sent[1:] == ["BEGIN", sent[2], "COMMIT"]
    assert sent[2].endswith("FOR UPDATE SKIP LOCKED")
    # after a claim that found records (a backlog), the next one goes to its locking read
    sent.clear()
    async with store.unit_of_work() as uow:
        assert await uow.repository(ORGANISATIONS).claim(Query(where=free, limit=2)) == [item]
        await uow.commit()
    assert sent == ["BEGIN", sent[1], "COMMIT"]
    assert sent[1].endswith("FOR UPDATE SKIP LOCKED")


# --- the bulk path ---------------------------------------------------------------------------


@PROPERTY
@given(data=st.data())
async def test_add_many_stores_what_add_would(
    store: StorageUnderTest, samples: type[Samples], data: st.DataObject
) -> None:
    await store.reset()
    collection = data.draw(st.sampled_from(ALL), label="collection")
    items = data.draw(samples.record_lists(collection, max_size=8), label="items")
    async with store.unit_of_work() as uow:
        await uow.repository(collection).add_many(items)
        await uow.commit()
    assert await walk(store, collection) == sorted(items, key=lambda i: sort_key(collection, i))
    async with store.unit_of_work() as uow:
        for item in items:
            assert await uow.repository(collection).get(item.id) == item


async def test_add_many_with_a_clash_conflicts_and_keeps_nothing_of_the_batch(
    store: StorageUnderTest,
) -> None:
    a, b = org("1"), org("2")
    await add_all(store, ORGANISATIONS, [a])
    with pytest.raises(Conflict):
        async with store.unit_of_work() as uow:
            await uow.repository(ORGANISATIONS).add_many([b, a])
            await uow.commit()
    assert await stored(store, ORGANISATIONS) == [a]


async def test_add_many_in_a_begun_transaction_is_seen_by_what_follows(
    store: StorageUnderTest,
) -> None:
    """A few records added after a write (which PostgreSQL sends with the next statement)
    are read back in the same unit of work and committed with it; a clash among them fails
    the unit of work by its commit at the latest, keeping nothing of it."""
    a, b, c = org("1"), org("2"), org("3")
    async with store.unit_of_work() as uow:
        repo = uow.repository(ORGANISATIONS)
        await repo.add(a)
        await repo.add_many([b, c])
        assert await repo.get(c.id) == c
        await uow.commit()
    kept = sorted([a, b, c], key=lambda i: str(i.id))
    assert await stored(store, ORGANISATIONS) == kept
    with pytest.raises(Conflict):
        async with store.unit_of_work() as uow:
            repo = uow.repository(ORGANISATIONS)
            await repo.add(org("4"))
            await repo.add_many([org("5"), a])
            await uow.commit()
    assert await stored(store, ORGANISATIONS) == kept


async def test_a_required_record_lets_the_unit_of_work_commit(store: StorageUnderTest) -> None:
    """``require`` of a record that is there: what the unit of work writes around it is
    committed, and reads after it see those writes."""
    ann = member(ORG_A, "ann")
    await add_all(store, MEMBERS, [ann])
    a, b = org("1"), org("2")
    async with store.unit_of_work() as uow:
        repo = uow.repository(ORGANISATIONS)
        await repo.add_many([a])
        await uow.repository(MEMBERS).require(
            NotAMember(org_id=str(ORG_A)), orgId=ORG_A, userRef="ann", status=MemberStatus.ACTIVE
        )
        await repo.add_many([b])
        assert await repo.get(b.id) == b
        await uow.commit()
    assert await stored(store, ORGANISATIONS) == sorted([a, b], key=lambda i: str(i.id))


@pytest.mark.parametrize("then", ["commit", "read", "update", "second check"])
async def test_a_required_record_missing_raises_its_error_and_keeps_nothing(
    store: StorageUnderTest, then: str
) -> None:
    """``require`` of a record that is not there (another user's, one of another status)
    raises the error given, by the statement or the commit it goes out with at the latest
    (PostgreSQL puts it off), and nothing the unit of work wrote is kept."""
    await add_all(store, MEMBERS, [member(ORG_A, "ann", status=MemberStatus.PENDING)])
    kept = org("0")
    await add_all(store, ORGANISATIONS, [kept])
    missing = NotAMember(org_id=str(ORG_A))
    with pytest.raises(NotAMember) as raised:
        async with store.unit_of_work() as uow:
            repo = uow.repository(ORGANISATIONS)
            await repo.add_many([org("1")])
            members = uow.repository(MEMBERS)
            await members.require(missing, orgId=ORG_A, userRef="ann", status=MemberStatus.ACTIVE)
            await repo.add_many([org("2")])
            if then == "read":
                await repo.get(kept.id)
            elif then == "update":
                await repo.update(attrs.evolve(kept, legal_name="Renamed"))
            elif then == "second check":
                await members.require(NotAMember(org_id="other"), orgId=ORG_A, userRef="ann")
            await uow.commit()
    assert raised.value is missing
    assert await stored(store, ORGANISATIONS) == [kept]


@pytest.mark.parametrize("how", ["update", "update_many", "replace"])
async def test_a_clash_of_records_added_surfaces_as_a_conflict_at_the_next_update(
    store: StorageUnderTest, how: str
) -> None:
    """A clash among records added (which PostgreSQL sends with the next statement) that
    fails with an update of a collection with unique keys is a ``Conflict``, not taken for the
    update's own clash (whose record could not be named: the transaction is aborted), and
    the unit of work keeps nothing."""
    a, b = org("1"), org("2")
    await add_all(store, ORGANISATIONS, [a, b])
    renamed = attrs.evolve(b, legal_name="Renamed")
    with pytest.raises(Conflict):
        async with store.unit_of_work() as uow:
            repo = uow.repository(ORGANISATIONS)
            await repo.add(org("3"))
            await repo.add_many([org("4"), a])
            if how == "update":
                await repo.update(renamed)
            elif how == "update_many":
                await repo.update_many([renamed, attrs.evolve(a, legal_name="Other")])
            else:
                await repo.replace(b, renamed)
            await uow.commit()
    kept = sorted([a, b], key=lambda i: str(i.id))
    assert await stored(store, ORGANISATIONS) == kept


async def test_remove_many_removes_those_there_and_counts_them(store: StorageUnderTest) -> None:
    items = [org(str(i)) for i in range(4)]
    await add_all(store, ORGANISATIONS, items)
    async with store.unit_of_work() as uow:
        repo = uow.repository(ORGANISATIONS)
        gone = [items[0].id, uuid.uuid4(), items[2].id, items[0].id, "not-a-uuid"]
        assert await repo.remove_many(gone) == 2
        assert await repo.remove_many([]) == 0
        await uow.commit()
    kept = [items[1], items[3]]
    assert await stored(store, ORGANISATIONS) == sorted(kept, key=lambda i: str(i.id))
