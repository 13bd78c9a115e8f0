"""The adapters side by side: every step runs on each, and each must answer as memory does.

A ``RuleBasedStateMachine`` in the manner of Hypothesis's own database-agreement test: rules
add, update, remove, look up and list records of every collection, on the memory adapter (the
reference), on SQLite and, when reachable, on PostgreSQL; after every step the full contents
must agree. Rules are synchronous (Hypothesis #4107), so the machine owns an
``asyncio.Runner``, made in ``__init__`` and closed in ``teardown``.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from fourcorner.adapters.sql.cache import CACHED_COLLECTIONS
from fourcorner.application.collections import ALL
from fourcorner.application.storage import Collection, Cursor, Query, Repository, UnitOfWork
from fourcorner.domain.errors import Conflict, NotFound
from fourcorner.domain.filtering import Condition

if TYPE_CHECKING:  # fixtures' types; conftest modules are not imported by name
    from conftest import OpenStorage, Samples, StorageUnderTest

COLLECTIONS = st.sampled_from(ALL)
# the collections the SQL adapters' readers answer from their record cache, drawn more often
CACHED = st.sampled_from([c for c in ALL if c.name in CACHED_COLLECTIONS])
Work = Callable[[UnitOfWork], Awaitable[Any]]


def _ident(collection: Collection[Any], item: Any) -> Any:
    return collection.columns["id"].get(item)


async def _walk(
    repo: Repository[Any], where: tuple[Condition, ...], search: str | None, limit: int
) -> list[Any]:
    found: list[Any] = []
    after: Cursor | None = None
    while True:
        page = await repo.list(Query(where=where, search=search, after=after, limit=limit))
        found.extend(page.items)
        if page.next_cursor is None:
            return found
        after = Cursor.decode(page.next_cursor)


class StorageComparison(RuleBasedStateMachine):
    def __init__(
        self, open_storage: OpenStorage, kinds: Sequence[str], samples: type[Samples]
    ) -> None:
        super().__init__()
        self.runner = asyncio.Runner()
        self.samples = samples
        self.subjects: list[StorageUnderTest] = []
        for kind in kinds:
            self.subjects.append(self.runner.run(open_storage(kind)))
        self.known: dict[str, list[Any]] = defaultdict(list)  # ids ever added, per collection
        self.touched: dict[str, Collection[Any]] = {}  # the others are empty everywhere
        self.probes: list[tuple[Collection[Any], Any, str, Any]] = []  # reader look-ups

    def teardown(self) -> None:
        try:
            for subject in self.subjects:
                self.runner.run(subject.close())
        finally:
            self.runner.close()

    # --- running one step everywhere ----------------------------------------------------------

    async def _attempt(self, subject: StorageUnderTest, work: Work, commit: bool) -> Any:
        async with subject.unit_of_work() as uow:
            try:
                value = await work(uow)
            except Conflict:
                return ("conflict", None)
            except NotFound:
                return ("not found", None)
            if commit:
                await uow.commit()
            return ("ok", value)

    def agree(self, work: Work, *, commit: bool = True) -> Any:
        """Run ``work`` in a unit of work of each adapter; all must give the same outcome."""
        reference, *others = self.subjects
        expected = self.runner.run(self._attempt(reference, work, commit))
        for subject in others:
            got = self.runner.run(self._attempt(subject, work, commit))
            assert got == expected, f"{subject.kind} answered {got!r}, memory {expected!r}"
        return expected

    def contents(self, collection: Collection[Any]) -> list[Any]:
        async def everything(uow: UnitOfWork) -> list[Any]:
            return await uow.repository(collection).all()

        return list(self.runner.run(self._attempt(self.subjects[0], everything, False))[1])

    def draw_item(self, collection: Collection[Any], data: st.DataObject) -> Any:
        """A new record, or (half the time, when there are some) one with a known id."""
        self.touched[collection.name] = collection
        item = data.draw(self.samples.records(collection), label="item")
        known = self.known[collection.name]
        if known and "id" in attrs.fields_dict(type(item)) and data.draw(st.booleans()):
            item = attrs.evolve(item, id=data.draw(st.sampled_from(known), label="known id"))
        return item

    # --- rules --------------------------------------------------------------------------------

    @rule(collection=COLLECTIONS, data=st.data())
    def add(self, collection: Collection[Any], data: st.DataObject) -> None:
        item = self.draw_item(collection, data)
        self.agree(lambda uow: uow.repository(collection).add(item))
        self.known[collection.name].append(_ident(collection, item))

    @rule(collection=COLLECTIONS, data=st.data())
    def update(self, collection: Collection[Any], data: st.DataObject) -> None:
        item = self.draw_item(collection, data)
        self.agree(lambda uow: uow.repository(collection).update(item))
        self.known[collection.name].append(_ident(collection, item))

    @rule(collection=COLLECTIONS, data=st.data())
    def remove(self, collection: Collection[Any], data: st.DataObject) -> None:
        known = self.known[collection.name]
        ident = data.draw(st.sampled_from(known)) if known else uuid.uuid4()
        self.agree(lambda uow: uow.repository(collection).remove(ident))

    @rule(collection=COLLECTIONS, data=st.data(), commit=st.booleans())
    def several_adds_in_one_unit(
        self, collection: Collection[Any], data: st.DataObject, commit: bool
    ) -> None:
        """Some may clash; the unit carries on, and commits (or not) what did not."""
        items = [self.draw_item(collection, data) for _ in range(data.draw(st.integers(2, 4)))]

        async def work(uow: UnitOfWork) -> list[bool]:
            repo = uow.repository(collection)
            added = []
            for item in items:
                try:
                    await repo.add(item)
                    added.append(True)
                except Conflict:
                    added.append(False)
            return added

        self.agree(work, commit=commit)
        self.known[collection.name].extend(_ident(collection, i) for i in items)

    @rule(collection=COLLECTIONS, data=st.data())
    def look_up(self, collection: Collection[Any], data: st.DataObject) -> None:
        items = self.contents(collection)
        name = data.draw(st.sampled_from(sorted(collection.columns)), label="column")
        spec = collection.columns[name]
        values = [spec.get(i) for i in items]
        value = data.draw(st.sampled_from(values) if values else st.none(), label="value")

        async def work(uow: UnitOfWork) -> tuple[Any, ...]:
            repo = uow.repository(collection)
            return (
                await repo.first(**{name: value}),
                await repo.all(**{name: value}),
                await repo.count(**{name: value}),
            )

        self.agree(work, commit=False)

    @rule(collection=CACHED | COLLECTIONS, data=st.data())
    def look_up_through_a_reader(self, collection: Collection[Any], data: st.DataObject) -> None:
        """``reader()`` units of work (answered from the SQL adapters' record cache for some
        collections) see exactly what the store holds; the look-up is repeated after every
        later step (``readers_see_every_commit``), so a stale cached answer shows."""
        items = self.contents(collection)
        name = data.draw(st.sampled_from(sorted(collection.columns)), label="column")
        spec = collection.columns[name]
        values = [spec.get(i) for i in items]
        value = data.draw(st.sampled_from(values) if values else st.none(), label="value")
        ident = data.draw(st.sampled_from(self.known[collection.name] or [uuid.uuid4()]))
        self.probes = [*self.probes[-4:], (collection, ident, name, value)]
        self.readers_see_every_commit()

    @precondition(lambda self: bool(self.probes))
    @rule(data=st.data())
    def change_a_probed_record(self, data: st.DataObject) -> None:
        """Replace or remove the record a reader looked up, so a stale answer would show."""
        collection, ident, _, _ = data.draw(st.sampled_from(self.probes), label="probe")
        if data.draw(st.booleans(), label="remove"):
            self.agree(lambda uow: uow.repository(collection).remove(ident))
            return
        item = data.draw(self.samples.records(collection), label="item")
        if type(_ident(collection, item)) is not type(ident):
            return  # a probe by an id of the wrong type (found nothing)
        item = attrs.evolve(item, id=ident)
        self.touched[collection.name] = collection
        self.agree(lambda uow: uow.repository(collection).update(item))

    @invariant()
    def readers_see_every_commit(self) -> None:
        for collection, ident, name, value in self.probes:

            async def look(
                uow: UnitOfWork,
                c: Collection[Any] = collection,
                ident: Any = ident,
                equals: dict[str, Any] = {name: value},  # noqa: B006  # read only
            ) -> tuple[Any, ...]:
                repo = uow.repository(c)
                return (await repo.get(ident), await repo.first(**equals), await repo.all(**equals))

            async def read(subject: StorageUnderTest, look: Work = look) -> Any:
                async with subject.storage.reader() as reader:
                    return await look(reader)

            expected = self.runner.run(self._attempt(self.subjects[0], look, False))[1]
            for subject in self.subjects:
                got = self.runner.run(read(subject))
                assert got == expected, f"{subject.kind}'s reader answered {got!r}"

    @rule(collection=COLLECTIONS, data=st.data())
    def list_pages(self, collection: Collection[Any], data: st.DataObject) -> None:
        items = self.contents(collection)
        where = tuple(data.draw(st.lists(self.samples.conditions(collection, items), max_size=2)))
        search = data.draw(self.samples.needles(collection, items), label="search")
        limit = data.draw(st.integers(1, 4), label="limit")
        self.agree(
            lambda uow: _walk(uow.repository(collection), where, search, limit), commit=False
        )

    @invariant()
    def every_collection_holds_the_same_records(self) -> None:
        for collection in self.touched.values():
            self.agree(lambda uow, c=collection: uow.repository(c).all(), commit=False)


def _compare(
    open_storage: OpenStorage, kinds: Sequence[str], samples: type[Samples], examples: int
) -> None:
    run_state_machine_as_test(
        lambda: StorageComparison(open_storage, kinds, samples),
        settings=settings(
            max_examples=examples,
            stateful_step_count=15,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )


def test_sqlite_agrees_with_memory(open_storage: OpenStorage, samples: type[Samples]) -> None:
    _compare(open_storage, ("memory", "sqlite"), samples, examples=40)


@pytest.mark.postgres
def test_postgres_and_sqlite_agree_with_memory(
    open_storage: OpenStorage, samples: type[Samples], postgres_url_and_schema: tuple[str, str]
) -> None:
    _compare(open_storage, ("memory", "sqlite", "postgres"), samples, examples=20)
