"""The repository of the storage port over SQL, shared by the SQLite and PostgreSQL adapters.

A unit of work hands it an ``Executor``: the one place that talks to the driver, opens the
transaction when needed and turns driver errors into domain errors (``Conflict`` for a unique
clash, ``ServiceUnavailable`` for the rest), so no driver exception reaches the caller.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar

import attrs
from cattrs.preconf.json import JsonConverter

from fourcorner.adapters.sql.cache import RecordCache
from fourcorner.adapters.sql.codec import make_converter
from fourcorner.adapters.sql.dialect import Dialect
from fourcorner.adapters.sql.table import Table, Tables, sql_value
from fourcorner.application.storage import (
    Collection,
    Page,
    Query,
    page_of,
    replaceable,
    unique_changed,
)
from fourcorner.domain import clock
from fourcorner.domain.errors import Conflict, DomainError, NotFound

T = TypeVar("T")
DECODED_CACHE = 4096
#: ``add_many`` writes up to this many records in one ``INSERT`` (one round trip on PostgreSQL,
#: where ``COPY`` takes two, and a ``BEGIN`` of its own); more go by the bulk path
FEW_RECORDS = 16


@attrs.define(eq=False, slots=False)
class PutOffClash(Conflict):
    """A clash of a change put off (``write_later``) that failed with a later statement of the
    unit of work: that statement's repository must not take it for its own (the transaction is
    aborted: nothing could be read to name the record, nor anything retried one by one)."""


class Executor(Protocol):
    async def fetch(
        self, sql: str, params: Sequence[object], *, locking: bool = False
    ) -> list[tuple[Any, ...]]:
        """The rows of a query. ``locking``: the query takes row locks, so it must run inside
        the unit of work's transaction (begun now if it has not been yet)."""
        ...

    async def write(self, sql: str, params: Sequence[object], *, may_clash: bool) -> int:
        """Run a change and return its row count. ``may_clash``: the statement may break a
        unique constraint, and the unit of work must survive that (``Conflict``)."""
        ...

    async def write_many(self, sql: str, rows: Sequence[Sequence[object]]) -> int:
        """Run one change for each of ``rows`` (none may break a unique constraint) and
        return the sum of their row counts."""
        ...

    async def write_later(self, sql: str, params: Sequence[object]) -> None:
        """``write`` a change whose row count nobody needs; in a transaction already begun it
        may be put off to go out with the unit of work's next statement (a read, a write or
        the commit), which then reports its failure (``Conflict`` for a clash): one round
        trip fewer in PostgreSQL. Whatever runs after it in the unit of work sees it."""
        ...

    async def require(self, sql: str, params: Sequence[object], missing: DomainError) -> None:
        """Raise ``missing`` unless the query ``sql`` finds a row; in a transaction it may be
        put off as ``write_later`` is, and the statement or commit it goes out with raises it."""
        ...

    async def bulk(self, sql: str, rows: Sequence[Sequence[object]]) -> None:
        """Load ``rows`` with ``Table.bulk_sql`` (PostgreSQL ``COPY``, a plain ``INSERT`` run
        for each row in SQLite); ``Conflict`` when one breaks a unique constraint."""
        ...

    def wrote(self, collection: str, *, added: bool = False) -> None:
        """A change to ``collection`` (``added``: an insert) is about to run: at commit, its
        cached records go, and an insert wakes the collection's watchers."""
        ...


class SqlRepository(Generic[T]):
    """``cache``: answer ``get``/``first``/``all`` from it (a reading unit of work's repository
    of a cached collection; see ``adapters.sql.cache``). ``reading``: the repository of a
    reading unit of work, which refuses to write or lock (its executor raises)."""

    def __init__(
        self,
        executor: Executor,
        table: Table,
        converter: JsonConverter,
        cache: RecordCache | None = None,
        *,
        reading: bool = False,
    ) -> None:
        self._x = executor
        self._t = table
        self._c = table.collection
        self._converter = converter
        self._cache = cache if cache is not None and cache.holds(table.name) else None
        self._reading = reading

    def _load(self, row: Sequence[Any]) -> T:
        """A record from its row: ``data``, then the lease's column where there is one."""
        data = row[0]
        cache = self._t.decoded
        item: T | None = cache.get(data)
        if item is None:
            item = self._converter.loads(data, self._c.type)
            if len(cache) >= DECODED_CACHE:
                cache.clear()
            cache[data] = item
        lease = self._t.lease_attribute
        if lease is not None:
            until = _instant(row[1])
            if getattr(item, lease) != until:
                item = attrs.evolve(item, **{lease: until})  # type: ignore[misc]
        return item

    async def _all(self, sql: str, params: Sequence[object], *, locking: bool = False) -> list[T]:
        return [self._load(row) for row in await self._x.fetch(sql, params, locking=locking)]

    async def _read(self, sql: str, params: tuple[object, ...]) -> Sequence[T]:
        cache = self._cache
        if cache is None:
            return await self._all(sql, params)
        name = self._t.name
        key = (sql, params)
        found: tuple[T, ...] | None = cache.get(name, key)
        if found is None:
            generation = cache.generation(name)
            found = tuple(await self._all(sql, params))
            cache.put(name, key, found, generation)
        return found

    async def get(self, ident: object) -> T | None:
        found = await self._read(self._t.get_sql, (self._t.key(ident),))
        return found[0] if found else None

    async def first(self, **equals: object) -> T | None:
        statement = self._t.select(equals, first=True)
        found = await self._read(statement.sql, statement.params)
        return found[0] if found else None

    async def all(self, **equals: object) -> list[T]:
        statement = self._t.select(equals)
        return list(await self._read(statement.sql, statement.params))

    async def require(self, missing: DomainError, **equals: object) -> None:
        statement = self._t.select(equals, first=True)
        await self._x.require(statement.sql, statement.params, missing)

    async def count(self, **equals: object) -> int:
        statement = self._t.count(equals)
        rows = await self._x.fetch(statement.sql, statement.params)
        return int(rows[0][0])

    async def list(self, query: Query) -> Page[T]:
        statement = self._t.page(query)
        rows = await self._all(statement.sql, statement.params)
        return page_of(self._c, rows, query.limit, query.order, query.list_id)

    async def lock(self, ident: object) -> T | None:
        statement = self._t.lock(ident)
        found = await self._all(statement.sql, statement.params, locking=True)
        return found[0] if found else None

    async def lock_many(self, idents: Sequence[object]) -> builtins.list[T]:
        if not idents:
            return []
        statement = self._t.lock_many(idents)
        return await self._all(statement.sql, statement.params, locking=True)

    async def claim(self, query: Query) -> builtins.list[T]:
        # Most claims of a polling worker find nothing: a plain read says so in one statement,
        # where the locking read begins a transaction to end (BEGIN, the query and ROLLBACK:
        # in PostgreSQL two round trips, in SQLite the write lock taken and let go). A record
        # committed before the claim began is seen by either; one this read sees may be taken
        # by another claim meanwhile, which the locking read then skips. While claims find
        # records (a backlog), the plain read would only add a statement: it is left out.
        table = self._t
        if not table.claim_found and not self._reading:  # a reader's claim fails as it locks
            peek = table.peek(query)
            if not await self._x.fetch(peek.sql, peek.params):
                return []
        statement = table.claim(query)
        found = await self._all(statement.sql, statement.params, locking=True)
        table.claim_found = bool(found)
        return found

    async def lease(self, idents: Sequence[object], until: datetime) -> int:
        if not idents:
            return 0
        statement = self._t.lease(idents, until)
        self._x.wrote(self._t.name)
        return await self._x.write(statement.sql, statement.params, may_clash=False)

    async def add(self, item: T) -> None:
        values = self._t.values(item, self._converter.dumps(item))
        self._x.wrote(self._t.name, added=self._c.announces((item,)))
        # ON CONFLICT DO NOTHING: a clash leaves the transaction usable, in PostgreSQL too.
        if await self._x.write(self._t.insert_sql, values, may_clash=False) == 0:
            raise Conflict(reason=await self._clash_reason(item, check_id=True))

    async def add_many(self, items: Sequence[T]) -> None:
        rows = [self._t.values(item, self._converter.dumps(item)) for item in items]
        if not rows:
            return
        self._x.wrote(self._t.name, added=self._c.announces(items))
        if len(rows) <= FEW_RECORDS:
            params = [value for row in rows for value in row]
            # its row count unread: it may go out with what follows (a clash fails it whole)
            await self._x.write_later(self._t.insert_many_sql(len(rows)), params)
            return
        await self._x.bulk(self._t.bulk_sql, rows)

    async def update(self, item: T) -> None:
        """Replace the record with the item's id: ``UPDATE``, never an insert, so a record
        removed meanwhile stays removed (``NotFound``); ``Conflict`` when another record holds
        one of its unique groups."""
        values = self._t.update_values(item, self._converter.dumps(item))
        self._x.wrote(self._t.name)
        try:
            count = await self._x.write(self._t.update_sql, values, may_clash=bool(self._c.unique))
        except PutOffClash:
            raise
        except Conflict as e:
            raise Conflict(reason=await self._clash_reason(item, check_id=False)) from e
        if count == 0:
            raise self._gone(item)

    async def replace(self, before: T, after: T) -> bool:
        replaceable(self._c, before, after)
        values = self._t.update_values(after, self._converter.dumps(after))
        expected = self._converter.dumps(before)
        self._x.wrote(self._t.name)
        try:
            count = await self._x.write(
                self._t.replace_sql,
                (*values, expected),
                may_clash=bool(self._c.unique) and unique_changed(self._c, before, after),
            )
        except PutOffClash:
            raise
        except Conflict as e:
            raise Conflict(reason=await self._clash_reason(after, check_id=False)) from e
        return count > 0

    async def update_many(self, items: Sequence[T], *, before: Sequence[T] = ()) -> None:
        many = self._t.update_many_sql
        # held by this unit of work (so stored), and no unique column changed: none can clash
        # or be missing
        kept = len(before) == len(items) > 0 and not any(
            unique_changed(self._c, b, a) for b, a in zip(before, items, strict=True)
        )
        clash = bool(self._c.unique) and not kept
        if clash and (many is None or len(items) < 2):  # a clash names its record
            await self._each(items)
            return
        # the last of each id (an update's id comes last), as one statement after another
        # would leave it
        last = {
            (row := self._t.update_values(item, self._converter.dumps(item)))[-1]: (row, item)
            for item in items
        }
        rows = [row for row, _ in last.values()]
        items = [item for _, item in last.values()]
        if not rows:
            return
        self._x.wrote(self._t.name)
        param = self._t.update_many_values(rows) if many is not None else None
        if kept:  # its row count unread: it may go out with what follows (the commit)
            if len(rows) == 1:
                await self._x.write_later(self._t.update_sql, rows[0])
            elif many is not None and param is not None:
                await self._x.write_later(many, param)
            else:
                await self._x.write_many(self._t.update_sql, rows)
            return
        if many is not None and param is not None:  # one statement for them all
            try:
                count = await self._x.write(many, param, may_clash=clash)
            except PutOffClash:
                raise
            except Conflict:  # undone whole: a clash must name its record, one at a time
                await self._each(items)
                return
        elif clash:
            await self._each(items)
            return
        else:
            count = await self._x.write_many(self._t.update_sql, rows)
        if count < len(rows):
            for item in items:  # name the first record that is gone
                record = self._c.row(item)
                if not await self._x.fetch(self._t.get_sql, (str(record["id"]),)):
                    raise self._gone(item)

    async def update_leased(
        self, leased: Sequence[tuple[T, datetime]]
    ) -> builtins.list[tuple[T, datetime]]:
        one = self._t.update_leased_sql
        if one is None:
            raise ValueError(f"{self._c.name} has no lease")
        # the last of each record and lease, in id order: the order ``lock_many`` holds
        # records in, so that two units of work writing some of the same wait, never deadlock
        last = {
            ((row := self._t.update_values(item, self._converter.dumps(item)))[-1], until): (
                row,
                item,
            )
            for item, until in leased
        }
        entries = sorted(last.items(), key=lambda e: str(e[0][0]))
        if not entries:
            return []
        self._x.wrote(self._t.name)
        clash = bool(self._c.unique)
        many = self._t.update_leased_many_sql
        if many is not None and len(entries) > 1:
            rows = [(*row, sql_value(until), n) for n, ((_, until), (row, _)) in enumerate(entries)]
            param = self._t.update_many_values(rows)
            if param is not None:  # one statement for them all; it returns their positions
                found = await self._x.fetch(many, param, locking=True)
                return [(entries[i][1][1], entries[i][0][1]) for i in sorted(r[0] for r in found)]
        written: list[tuple[T, datetime]] = []
        done: set[object] = set()  # each record compared with the lease it held before
        for (ident, until), (row, item) in entries:
            if ident in done:
                continue
            if await self._x.write(one, (*row, sql_value(until)), may_clash=clash):
                written.append((item, until))
                done.add(ident)
        return written

    async def _each(self, items: Sequence[T]) -> None:
        """``update`` of each item in turn: a clash or a missing record names its record."""
        for item in items:
            await self.update(item)

    def _gone(self, item: T) -> NotFound:
        return NotFound(resource=f"{self._c.name} record", ident=str(self._c.row(item)["id"]))

    async def remove(self, ident: object) -> bool:
        self._x.wrote(self._t.name)
        return await self._x.write(self._t.delete_sql, (self._t.key(ident),), may_clash=False) > 0

    async def remove_many(self, idents: Sequence[object]) -> int:
        if not idents:
            return 0
        self._x.wrote(self._t.name)
        statement = self._t.delete_many(idents)
        return await self._x.write(statement.sql, statement.params, may_clash=False)

    async def _clash_reason(self, item: T, *, check_id: bool) -> str:
        row = self._c.row(item)
        ident = str(row["id"])
        if check_id and await self._x.fetch(self._t.get_sql, (ident,)):
            return f"a {self._c.name} record with id {ident} exists"
        for group in self._c.unique:
            values = [sql_value(row[field]) for field in group]
            if any(v is None for v in values):
                continue
            if await self._x.fetch(self._t.clash(group), (*values, ident)):
                return f"a {self._c.name} record with this {', '.join(group)} exists"
        # The clashing record belongs to a transaction not yet committed.
        return f"a {self._c.name} record with this id or unique key exists"


def _instant(value: object) -> datetime:
    """A datetime column's value as read: a ``datetime`` (PostgreSQL) or the sortable text
    (SQLite), in UTC."""
    if isinstance(value, datetime):
        return clock.utc(value)
    return clock.parse(str(value))


class Repositories:
    """What the units of work of one SQL storage build their repositories from: the tables of
    its ``dialect``, one JSON codec, and the storage's record cache (or none)."""

    def __init__(self, dialect: Dialect, cache: RecordCache | None) -> None:
        self.tables = Tables(dialect)
        self.converter = make_converter()
        self.cache = cache

    def __call__(
        self, executor: Executor, collection: Collection[T], *, cached: bool = False
    ) -> SqlRepository[T]:
        """``collection``'s repository on ``executor``; ``cached``: a reading unit of work's,
        whose reads may be answered from the record cache."""
        cache = self.cache if cached else None
        table = self.tables(collection)
        return SqlRepository(executor, table, self.converter, cache, reading=cached)
