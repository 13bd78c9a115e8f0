"""A client's datetime filter compares at the precision the interface shows (every adapter).

The interface shows ``createdAt`` with milliseconds (a transaction's with nanoseconds); stored
values carry microseconds. Filtering by a record's own ``createdAt`` as shown must find it with
``eq``, ``gte`` and ``lte``, and leave it out with ``gt``, ``lt`` and ``ne``.
"""

from __future__ import annotations

import calendar
from typing import TYPE_CHECKING, Any

import attrs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fourcorner.application.collections import ALL, TRANSACTIONS
from fourcorner.application.listing import ListRequest, build_query
from fourcorner.application.storage import Collection
from fourcorner.domain import clock
from fourcorner.domain.transaction import Transaction

if TYPE_CHECKING:  # fixtures' types; conftest modules are not imported by name
    from conftest import Samples, StorageUnderTest

PROPERTY = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
WITH_CREATED_AT = [c for c in ALL if "createdAt" in c.filters]
EXPECTED = {"eq": True, "gte": True, "lte": True, "gt": False, "lt": False, "ne": False}


def shown_created_at(item: Any) -> str:
    """``createdAt`` as the interface shows the record (``entrypoints.http``: the converter's
    ``clock.iso`` for records, ``clock.iso_ns`` of ``created_ns`` for transactions)."""
    if isinstance(item, Transaction):
        return clock.iso_ns(item.created_ns)
    return clock.iso(item.created_at)


def as_created(item: Any, nanos: int) -> Any:
    """A transaction as the service makes one: ``created_at`` from the same nanoseconds."""
    if not isinstance(item, Transaction):
        return item
    at = clock.utc(item.created_at)
    ns = (calendar.timegm(at.timetuple()) * 1_000_000 + at.microsecond) * 1000 + nanos
    return attrs.evolve(item, created_ns=ns, created_at=clock.from_ns(ns))


async def listed(store: StorageUnderTest, collection: Collection[Any], expr: str) -> list[Any]:
    query = build_query(collection, ListRequest(filters=(expr,), limit=500))
    async with store.unit_of_work() as uow:
        return (await uow.repository(collection).list(query)).items


def test_every_listed_resource_with_created_at_is_covered() -> None:
    assert TRANSACTIONS in WITH_CREATED_AT and len(WITH_CREATED_AT) >= 10


@PROPERTY
@given(data=st.data())
async def test_filtering_by_a_records_own_shown_created_at(
    store: StorageUnderTest, samples: type[Samples], data: st.DataObject
) -> None:
    await store.reset()
    collection = data.draw(st.sampled_from(WITH_CREATED_AT), label="collection")
    items = data.draw(samples.record_lists(collection, min_size=1, max_size=5), label="items")
    nanos = data.draw(st.integers(0, 999), label="nanoseconds")
    items = [as_created(i, nanos) for i in items]
    async with store.unit_of_work() as uow:
        for item in items:
            await uow.repository(collection).add(item)
        await uow.commit()
    target = data.draw(st.sampled_from(items), label="target")
    shown = shown_created_at(target)
    for op, included in EXPECTED.items():
        found = await listed(store, collection, f"createdAt:{op}:{shown}")
        assert (target in found) is included, (op, shown, clock.sortable(target.created_at))
