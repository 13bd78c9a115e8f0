"""The storage port: a unit of work over typed collections, queried by the filter language.

Every aggregate is a ``Collection``: a record type plus the columns it is found and filtered
by. Adapters (memory, SQLite, PostgreSQL) store the whole record and index those columns; the
contract suite in ``tests/contract`` checks that they agree. Lists page by keyset on
(``createdAt``, ``id``), so a page costs the same whatever its number.
"""

from __future__ import annotations

import base64
import binascii
import builtins
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Generic, Protocol, Self, TypeVar

import attrs

from domain.errors import InvalidCursor
from domain.filtering import Condition, FieldSpec, Scalar
from domain.text import text_problem

T = TypeVar("T")

MAX_LIMIT = 500
DEFAULT_LIMIT = 100


@attrs.frozen
class Collection(Generic[T]):
    """An aggregate's storage description.

    ``columns`` are stored beside the record (by their JSON field names) and may be used in
    ``Query.where`` and ``first``/``all``; ``filterable`` names those a client may filter on;
    ``search`` names the string columns that free-text search covers; ``unique`` lists column
    tuples that are unique together (``None`` values never clash).
    """

    name: str
    type: type[T]
    columns: Mapping[str, FieldSpec]
    filterable: frozenset[str]
    search: tuple[str, ...] = ()
    unique: tuple[tuple[str, ...], ...] = ()

    def __attrs_post_init__(self) -> None:
        for required in ("id", "createdAt"):
            if required not in self.columns:
                raise ValueError(f"collection {self.name} needs a column {required}")
        for group in self.unique:
            for col in group:
                if col not in self.columns:
                    raise ValueError(f"unique column {col} of {self.name} is not a column")

    @property
    def filters(self) -> dict[str, FieldSpec]:
        return {n: s for n, s in self.columns.items() if n in self.filterable}

    def row(self, item: T) -> dict[str, Scalar]:
        """The column values of ``item`` in stored form."""
        return {name: spec.column(item) for name, spec in self.columns.items()}

    def search_text(self, item: T) -> str:
        """The lower-cased text that free-text search looks in."""
        return "\x1f".join(str(self.columns[n].get(item) or "") for n in self.search).lower()


@attrs.frozen
class Cursor:
    """Where a page ends: the (sortable createdAt, id) of its last record."""

    created_at: str
    id: str

    def encode(self) -> str:
        raw = f"{self.created_at}|{self.id}".encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str) -> Cursor:
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()
            created_at, ident = raw.split("|", 1)
        except (ValueError, UnicodeDecodeError, binascii.Error):
            raise InvalidCursor() from None
        if len(created_at) != 27 or not ident or len(ident) > 200 or text_problem(raw):
            raise InvalidCursor()
        return cls(created_at, ident)


@attrs.frozen
class Query:
    where: tuple[Condition, ...] = ()
    search: str | None = None
    after: Cursor | None = None
    limit: int = DEFAULT_LIMIT


@attrs.frozen
class Page(Generic[T]):
    items: list[T]
    next_cursor: str | None


def page_of(collection: Collection[Any], rows: Sequence[T], limit: int) -> Page[T]:
    """Cut ``limit + 1`` fetched records to a page and its cursor."""
    if len(rows) <= limit:
        return Page(list(rows), None)
    items = list(rows[:limit])
    last = items[-1]
    created = collection.columns["createdAt"].column(last)
    ident = collection.columns["id"].column(last)
    return Page(items, Cursor(str(created), str(ident)).encode())


class Repository(Protocol[T]):
    async def get(self, ident: object) -> T | None: ...

    async def lock(self, ident: object) -> T | None:
        """``get``, holding the record against other writers until the unit of work ends
        (``SELECT ... FOR UPDATE``), for read-modify-write of records several workers touch."""
        ...

    async def lock_many(self, idents: Sequence[object]) -> builtins.list[T]:
        """The records with these ids (those that exist), in id order, each held as ``lock``
        holds one. Taking them in one order keeps two units of work that lock overlapping
        sets from deadlocking."""
        ...

    async def first(self, **equals: object) -> T | None:
        """The first record (in list order) whose columns equal the given values."""
        ...

    async def all(self, **equals: object) -> list[T]:
        """Every record whose columns equal the given values, in list order."""
        ...

    async def add(self, item: T) -> None:
        """Insert; ``domain.errors.Conflict`` when the id or a unique column group clashes."""
        ...

    async def update(self, item: T) -> None:
        """Replace the stored record with the same id; ``Conflict`` on a unique clash,
        ``domain.errors.NotFound`` when there is none: an update never inserts, so a record
        another unit of work removed stays removed. A decision to update belongs on a record
        read in the same unit of work, under ``lock`` where others may change it."""
        ...

    async def update_many(self, items: Sequence[T]) -> None:
        """``update`` each item, in as few round trips as the store allows; ``NotFound``
        names a record that is not there, and the others may have been replaced by then
        (roll the unit of work back)."""
        ...

    async def remove(self, ident: object) -> bool: ...

    async def list(self, query: Query) -> Page[T]: ...

    async def claim(self, query: Query) -> builtins.list[T]:
        """Up to ``query.limit`` records of ``query``, in list order, locked against every other
        unit of work that claims them until this one ends; records locked elsewhere are skipped
        (``FOR UPDATE SKIP LOCKED``). Adapters whose units of work never overlap list them."""
        ...

    async def count(self, **equals: object) -> int: ...


class UnitOfWork(Protocol):
    """``async with uow: ...; await uow.commit()`` — anything not committed is rolled back."""

    def repository(self, collection: Collection[T]) -> Repository[T]: ...

    async def commit(self) -> None: ...

    async def rollback(self) -> None: ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


class UnitOfWorkFactory(Protocol):
    def __call__(self) -> UnitOfWork: ...


class Storage(Protocol):
    """A storage adapter's life cycle: open (and migrate), check, close."""

    def unit_of_work(self) -> UnitOfWork: ...

    def reader(self) -> UnitOfWork:
        """A unit of work that only reads. ``get``/``first``/``all`` may be answered from
        records this process keeps: never older than this process's last commit, and on a
        store shared by several processes at most a moment (the adapter says how long) behind
        another process's commit. Writing, ``lock`` and ``claim`` raise ``RuntimeError``:
        read-modify-write belongs in ``unit_of_work()``, which always reads the store."""
        ...

    def watch(self, collections: Iterable[str], callback: Callable[[], None]) -> None:
        """Call ``callback`` (on this process's loop) soon after a unit of work commits a
        record added to one of ``collections``: one of this process always; one of another
        process where the store can tell (PostgreSQL, for the collections it was told to
        announce). Calls may be merged or come without new work: a hint to look (an outbox
        worker's wake-up), not a promise."""
        ...

    async def open(self) -> None: ...

    async def ping(self) -> None:
        """Raise ``domain.errors.ServiceUnavailable`` when the store cannot be reached."""
        ...

    async def close(self) -> None: ...
