"""The storage port in memory: serialisable units of work with copy-on-write rollback."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, Generic, Self, TypeVar

import attrs

from fourcorner.adapters.changes import Watchers
from fourcorner.application.storage import (
    Collection,
    Page,
    Query,
    UnitOfWorkEnd,
    page_of,
    replaceable,
)
from fourcorner.domain.errors import Conflict, DomainError, NotFound
from fourcorner.domain.filtering import Condition, Scalar, storable

T = TypeVar("T")


@attrs.define
class _Table:
    items: dict[str, Any] = attrs.field(factory=dict)
    rows: dict[str, dict[str, Scalar]] = attrs.field(factory=dict)
    search: dict[str, str] = attrs.field(factory=dict)

    def copy(self) -> _Table:
        return _Table(dict(self.items), dict(self.rows), dict(self.search))


class InMemoryStorage:
    """All state in one process's memory; units of work run one at a time."""

    def __init__(self) -> None:
        self._tables: dict[str, _Table] = {}
        self._lock = asyncio.Lock()
        self._watchers = Watchers()

    def watch(self, collections: Iterable[str], callback: Callable[[], None]) -> None:
        self._watchers.add(collections, callback)

    def unit_of_work(self) -> InMemoryUnitOfWork:
        return InMemoryUnitOfWork(self)

    def reader(self) -> InMemoryUnitOfWork:
        """Reads the committed tables without waiting for the unit-of-work lock: a commit
        replaces whole tables, so a reader never sees half of one."""
        return InMemoryUnitOfWork(self, reading=True)

    def read_stamp(self) -> None:
        """Readers read the tables themselves: nothing is kept that a stamp could vouch for."""
        return None

    async def open(self) -> None:
        return None

    async def ping(self) -> None:
        return None

    async def close(self) -> None:
        return None

    def table(self, name: str) -> _Table:
        """The committed table ``name`` (a unit of work writes to a copy of it)."""
        return self._tables.setdefault(name, _Table())

    async def hold(self) -> None:
        """Wait until no other unit of work that writes is open, and keep them out."""
        await self._lock.acquire()

    def let_go(self) -> None:
        self._lock.release()

    def publish(self, tables: dict[str, _Table], added: set[str]) -> None:
        """Commit: ``tables`` replace the committed ones; the watchers of the collections
        records were ``added`` to hear of it."""
        self._tables.update(tables)
        self._watchers.changed(added)


class InMemoryUnitOfWork(UnitOfWorkEnd):
    def __init__(self, storage: InMemoryStorage, *, reading: bool = False) -> None:
        self._storage = storage
        self._working: dict[str, _Table] = {}
        self.reading = reading

    async def __aenter__(self) -> Self:
        if not self.reading:
            await self._storage.hold()
        self._working = {}
        self.added: set[str] = set()  # collections this unit of work added records to
        return self

    async def discard(self) -> None:
        await self.rollback()

    async def release(self) -> None:
        if not self.reading:
            self._storage.let_go()

    async def commit(self) -> None:
        working, self._working = self._working, {}
        added, self.added = self.added, set()
        self._storage.publish(working, added)

    async def rollback(self) -> None:
        self._working = {}
        self.added = set()

    def repository(self, collection: Collection[T]) -> InMemoryRepository[T]:
        return InMemoryRepository(self, collection)

    def table(self, name: str) -> _Table:
        """The table ``name`` as this unit of work sees it."""
        return self._working.get(name) or self._storage.table(name)

    def writable(self, name: str) -> _Table:
        """This unit of work's own copy of the table ``name``, to change."""
        if self.reading:
            raise RuntimeError("a reader() unit of work cannot write")
        if name not in self._working:
            self._working[name] = self._storage.table(name).copy()
        return self._working[name]


def _sort_key(row: dict[str, Scalar]) -> tuple[str, str]:
    return (str(row["createdAt"]), str(row["id"]))


class InMemoryRepository(Generic[T]):
    def __init__(self, uow: InMemoryUnitOfWork, collection: Collection[T]) -> None:
        self._uow = uow
        self._c = collection

    async def get(self, ident: object) -> T | None:
        item: T | None = self._uow.table(self._c.name).items.get(str(ident))
        return item

    def _matching(self, equals: dict[str, object]) -> list[T]:
        table = self._uow.table(self._c.name)
        wanted = {k: storable(v) for k, v in equals.items()}
        for k in wanted:
            if k not in self._c.columns:
                raise KeyError(f"{k} is not a column of {self._c.name}")
        keys = [
            ident
            for ident, row in table.rows.items()
            if all(row[k] == v and row[k] is not None for k, v in wanted.items())
        ]
        keys.sort(key=lambda i: _sort_key(table.rows[i]))
        return [table.items[i] for i in keys]

    async def lock(self, ident: object) -> T | None:
        if self._uow.reading:
            raise RuntimeError("a reader() unit of work cannot lock records")
        return await self.get(ident)  # units of work never overlap here

    async def lock_many(self, idents: Sequence[object]) -> list[T]:
        if self._uow.reading:
            raise RuntimeError("a reader() unit of work cannot lock records")
        items = self._uow.table(self._c.name).items
        return [items[i] for i in sorted({str(i) for i in idents}) if i in items]

    async def first(self, **equals: object) -> T | None:
        found = self._matching(equals)
        return found[0] if found else None

    async def all(self, **equals: object) -> list[T]:
        return self._matching(equals)

    async def require(self, missing: DomainError, **equals: object) -> None:
        if self._uow.reading:
            raise RuntimeError("a reader() unit of work cannot write")
        if not self._matching(equals):
            raise missing

    async def count(self, **equals: object) -> int:
        return len(self._matching(equals))

    def _check_unique(self, table: _Table, ident: str, row: dict[str, Scalar]) -> None:
        """``Conflict`` when another row holds this row's values in a unique group (one with
        a ``None`` never clashes): every group compared in one pass over the rows."""
        keys = [(group, tuple(row[c] for c in group)) for group in self._c.unique]
        keys = [(group, key) for group, key in keys if not any(v is None for v in key)]
        if not keys:
            return
        for other_id, other in table.rows.items():
            if other_id == ident:
                continue
            for group, key in keys:
                if tuple(other[c] for c in group) == key:
                    raise Conflict(reason=f"a {self._c.name} record with this {', '.join(group)}")

    async def add(self, item: T) -> None:
        row = self._c.row(item)
        ident = str(row["id"])
        table = self._uow.writable(self._c.name)
        if ident in table.items:
            raise Conflict(reason=f"a {self._c.name} record with id {ident} exists")
        self._check_unique(table, ident, row)
        self._put(table, ident, item, row)
        if self._c.announces((item,)):
            self._uow.added.add(self._c.name)

    async def update(self, item: T) -> None:
        row = self._c.row(item)
        ident = str(row["id"])
        table = self._uow.writable(self._c.name)
        if ident not in table.items:  # an update never brings a removed record back
            raise NotFound(resource=f"{self._c.name} record", ident=ident)
        self._check_unique(table, ident, row)
        self._put(table, ident, item, row)

    async def update_many(self, items: Sequence[T], *, before: Sequence[T] = ()) -> None:
        for item in items:  # each checked for clashes: as cheap here as not
            await self.update(item)

    async def replace(self, before: T, after: T) -> bool:
        replaceable(self._c, before, after)
        ident = str(self._c.row(before)["id"])
        if self._uow.table(self._c.name).items.get(ident) != before:
            return False
        await self.update(after)
        return True

    async def lease(self, idents: Sequence[object], until: datetime) -> int:
        if self._c.lease is None:
            raise ValueError(f"{self._c.name} has no lease")
        table = self._uow.writable(self._c.name)
        change = {self._c.lease_attribute: until}
        found = [i for i in dict.fromkeys(map(str, idents)) if i in table.items]
        for ident in found:
            item = attrs.evolve(table.items[ident], **change)
            self._put(table, ident, item, self._c.row(item))
        return len(found)

    async def update_leased(self, leased: Sequence[tuple[T, datetime]]) -> list[tuple[T, datetime]]:
        if self._c.lease is None:
            raise ValueError(f"{self._c.name} has no lease")
        lease = self._c.lease_attribute
        # the last of each record and lease, in id order, as the SQL stores write them
        last = {(str(self._c.row(item)["id"]), until): item for item, until in leased}
        written: list[tuple[T, datetime]] = []
        done: set[str] = set()  # each record compared with the lease it held before
        for (ident, until), item in sorted(last.items(), key=lambda e: e[0][0]):
            stored = self._uow.table(self._c.name).items.get(ident)
            if ident not in done and stored is not None and getattr(stored, lease) == until:
                await self.update(item)
                written.append((item, until))
                done.add(ident)
        return written

    async def add_many(self, items: Sequence[T]) -> None:
        for item in items:
            await self.add(item)

    def _put(self, table: _Table, ident: str, item: T, row: dict[str, Scalar]) -> None:
        table.items[ident] = item
        table.rows[ident] = row
        table.search[ident] = self._c.search_text(item)

    async def remove(self, ident: object) -> bool:
        key = str(ident)
        if self._uow.reading:
            raise RuntimeError("a reader() unit of work cannot write")
        if key not in self._uow.table(self._c.name).items:
            return False
        table = self._uow.writable(self._c.name)
        del table.items[key], table.rows[key], table.search[key]
        return True

    async def remove_many(self, idents: Sequence[object]) -> int:
        return sum([await self.remove(i) for i in dict.fromkeys(map(str, idents))])

    async def claim(self, query: Query) -> list[T]:
        if self._uow.reading:
            raise RuntimeError("a reader() unit of work cannot lock records")
        # units of work run one at a time here, so nothing else can hold these records
        return (await self.list(query)).items

    async def list(self, query: Query) -> Page[T]:
        query.check_cursor()
        table = self._uow.table(self._c.name)
        needle = query.search.lower() if query.search else None
        order, after = query.order, query.after
        chosen: list[str] = []
        for ident, row in table.rows.items():
            if after is not None and not order.after(order.row_key(row), after):
                continue
            if needle is not None and needle not in table.search[ident]:
                continue
            if all(_holds(c, row) for c in query.where):
                chosen.append(ident)
        chosen.sort(key=lambda i: order.row_key(table.rows[i]), reverse=order.descending)
        rows = [table.items[i] for i in chosen[: query.limit + 1]]
        return page_of(self._c, rows, query.limit, order, query.list_id)


def _holds(condition: Condition, row: dict[str, Scalar]) -> bool:
    return condition.holds(row[condition.field.name])
