"""The storage port: a unit of work over typed collections, queried by the filter language.

Every aggregate is a ``Collection``: a record type plus the columns it is found and filtered
by. Adapters (memory, SQLite, PostgreSQL) store the whole record and index those columns; the
contract suite in ``tests/contract`` checks that they agree. Lists are sorted by one column
(``Order``, ``createdAt`` unless asked otherwise), then by ``id`` in the same direction, and
page by keyset on that pair: a page costs the same whatever its number, and its cursor names
the sort it was made for.
"""

from __future__ import annotations

import base64
import binascii
import builtins
import functools
import hashlib
import json
import re
import uuid
from collections.abc import Awaitable, Callable, Hashable, Iterable, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Generic, Protocol, Self, TypeVar

import attrs
import orjson

from fourcorner.domain.errors import Conflict, DomainError, InvalidCursor, InvalidInput
from fourcorner.domain.filtering import Condition, FieldSpec, FieldType, Scalar
from fourcorner.domain.text import text_problem

T = TypeVar("T")

MAX_LIMIT = 500
#: seconds that something computed from ``Storage.reader()`` reads may be kept, at most, while
#: ``Storage.read_stamp()`` stays equal: the bound on how long a change made to the database by
#: anything but this service (``psql``, a restore) may go unseen, the record cache's too
STAMP_MAX_AGE = 5.0
DEFAULT_LIMIT = 100


@attrs.frozen
class Collection(Generic[T]):
    """An aggregate's storage description.

    ``columns`` are stored beside the record (by their JSON field names) and may be used in
    ``Query.where`` and ``first``/``all``; ``filterable`` names those a client may filter on;
    ``search`` lists what free-text search covers: columns by name, and fields stored in no
    column of their own (a ``FieldSpec``: a member's email, an event payload's transaction
    id), in the order the stored search text joins them; ``unique`` lists column
    tuples that are unique together (``None`` values never clash). A client may sort a list by
    ``createdAt`` and by any filterable column (``sortable``); ``default_sort`` is the order of
    a list that names none (``-createdAt``: newest first).

    ``lease``: the datetime column of a claim's lease (its field in the record under the
    column's snake-case name), written on its own by ``Repository.lease``: a store that also
    keeps the whole record reads that field from the column, never from the record's copy.

    ``wakes``: which added records are work for the collection's watchers (``Storage.watch``),
    so that only adding one of those tells them; ``None``: every record added does.
    """

    name: str
    type: type[T]
    columns: Mapping[str, FieldSpec]
    filterable: frozenset[str]
    search: tuple[str | FieldSpec, ...] = ()
    unique: tuple[tuple[str, ...], ...] = ()
    default_sort: str = "createdAt"
    lease: str | None = None
    wakes: Callable[[T], bool] | None = attrs.field(default=None, eq=False)

    def announces(self, added: Iterable[T]) -> bool:
        """Whether adding ``added`` is work for the collection's watchers (``wakes``)."""
        wakes = self.wakes
        return True if wakes is None else any(map(wakes, added))

    def __attrs_post_init__(self) -> None:
        if self.lease is not None:
            spec = self.columns.get(self.lease)
            if spec is None or spec.type is not FieldType.DATETIME:
                raise ValueError(f"the lease of {self.name} is not a datetime column")
            if self.lease_attribute not in attrs.fields_dict(self.type):  # type: ignore[arg-type]
                raise ValueError(f"{self.name} records have no field {self.lease_attribute}")
        for required in ("id", "createdAt"):
            if required not in self.columns:
                raise ValueError(f"collection {self.name} needs a column {required}")
        for group in self.unique:
            for col in group:
                if col not in self.columns:
                    raise ValueError(f"unique column {col} of {self.name} is not a column")
        for field in self.search:
            if isinstance(field, str) and field not in self.columns:
                raise ValueError(f"search field {field} of {self.name} is not a column")

    @property
    def filters(self) -> dict[str, FieldSpec]:
        return {n: s for n, s in self.columns.items() if n in self.filterable}

    @property
    def sortable(self) -> tuple[str, ...]:
        """The columns a client may sort a list by, ``createdAt`` first."""
        return ("createdAt", *sorted(self.filterable - {"createdAt"}))

    def order(self, text: str | None) -> Order:
        """The ``Order`` a client asked for (``sort=<field>`` or ``sort=-<field>``), or the
        default; ``InvalidInput`` naming ``sort`` when the field is not one of ``sortable``."""
        wanted = self.default_sort if text is None else text
        descending = wanted.startswith("-")
        field = wanted[1:] if descending else wanted
        if field not in self.sortable:
            choices = ", ".join(f"{f}, -{f}" for f in self.sortable)
            raise InvalidInput.one(
                "sort", f"{wanted!r} is not a sort of this list; sorts: {choices}"
            )
        return Order(field, descending)

    @property
    def lease_attribute(self) -> str:
        """The record's field of ``lease`` (``leaseUntil`` → ``lease_until``)."""
        if self.lease is None:
            raise ValueError(f"{self.name} has no lease")
        return "".join(f"_{c.lower()}" if c.isupper() else c for c in self.lease)

    def row(self, item: T) -> dict[str, Scalar]:
        """The column values of ``item`` in stored form."""
        return {name: spec.column(item) for name, spec in self.columns.items()}

    @functools.cached_property
    def searched(self) -> tuple[FieldSpec, ...]:
        """The fields free-text search covers, in order (taken once: every write asks)."""
        return tuple(self.columns[f] if isinstance(f, str) else f for f in self.search)

    def search_text(self, item: T) -> str:
        """The lower-cased text that free-text search looks in: each field's value in stored
        form (an enum by its value, an id in canonical form; none: empty), joined by U+001F,
        which no search can hold (``domain.text``)."""
        return "\x1f".join(str(s.column(item) or "") for s in self.searched).lower()


@attrs.frozen
class Order:
    """A list's order: by the column ``field``, then by ``id``, both ascending or both
    descending. No value (NULL) sorts before every value, so last when descending; text sorts
    in code point order. ``key`` is the reference every adapter reproduces."""

    field: str = "createdAt"
    descending: bool = False

    @property
    def text(self) -> str:
        return f"-{self.field}" if self.descending else self.field

    def key(self, value: Scalar, ident: str) -> tuple[tuple[int, Any], str]:
        """The ascending sort key of a record with ``value`` in ``field`` and id ``ident``."""
        return ((0, "") if value is None else (1, value)), ident

    def row_key(self, row: Mapping[str, Scalar]) -> tuple[tuple[int, Any], str]:
        return self.key(row[self.field], str(row["id"]))

    def after(self, key: tuple[tuple[int, Any], str], cursor: Cursor) -> bool:
        """Whether a record with sort key ``key`` comes after ``cursor`` in this order."""
        mark = self.key(cursor.value, cursor.id)
        return key < mark if self.descending else key > mark


_MAX_CURSOR_TEXT = 4096


@attrs.frozen
class Cursor:
    """Where a page ends: the sort value and id of its last record, the sort (``Order.text``)
    and the list (``list_of``: its collection and the conditions the service sets) it belongs
    to."""

    value: Scalar
    id: str
    order: str = "createdAt"
    list_id: str = ""

    def encode(self) -> str:
        raw = json.dumps([self.order, self.value, self.id, self.list_id], separators=(",", ":"))
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str, order: Order | None = None, spec: FieldSpec | None = None) -> Cursor:
        """Read a cursor; ``InvalidCursor`` unless this service made it for ``order`` (when
        given) with a value ``spec``'s column can hold (when given). Its list is checked with
        the query it goes into (``Query.check_cursor``)."""
        if len(text) > _MAX_CURSOR_TEXT:
            raise InvalidCursor()
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
            sort, value, ident, of = orjson.loads(raw)  # refuses bad UTF-8, lone surrogates
        except (ValueError, TypeError, binascii.Error):
            raise InvalidCursor() from None
        if not isinstance(sort, str) or not isinstance(ident, str) or not ident:
            raise InvalidCursor()
        if not isinstance(of, str) or not _LIST_TAG.fullmatch(of):
            raise InvalidCursor()
        if value is not None and not isinstance(value, str | int | bool):
            raise InvalidCursor()
        if len(ident) > 200 or not _storable_text(ident) or text_problem(sort):
            raise InvalidCursor()
        if isinstance(value, str) and not _storable_text(value):
            raise InvalidCursor()
        if order is not None and sort != order.text:
            raise InvalidCursor()
        if spec is not None and not _holds(spec, value):
            raise InvalidCursor()
        return cls(value, ident, sort, of)


_LIST_TAG = re.compile(r"[0-9a-f]{16}|")


def list_of(collection: Collection[Any], scope: Sequence[Condition], owner: object = "") -> str:
    """The list a query reads, as its cursors carry it: a digest of the collection's name, the
    conditions the service sets (an organisation, a direction) and the ``owner`` of a list the
    service computes (the organisation whose usable SMPs, the transaction whose artefacts),
    so that a cursor of one list (another organisation's, the other direction's, another
    collection's) is refused by every other. The client's own filters and search are not part
    of it."""
    text = json.dumps([collection.name, str(owner), [c.render() for c in scope]])
    return hashlib.blake2s(text.encode(), digest_size=8).hexdigest()


def _storable_text(text: str) -> bool:
    """Text every store can compare with: UTF-8 (no lone surrogates) without NUL. A column may
    hold other control characters, so a cursor may too."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return "\x00" not in text


def _holds(spec: FieldSpec, value: Scalar) -> bool:
    """Whether ``value`` is of the kind ``spec``'s column stores."""
    if value is None:
        return spec.name not in ("id", "createdAt")
    if spec.type is FieldType.BOOL:
        return isinstance(value, bool)
    if spec.type is FieldType.INT:  # and one a 64-bit column holds
        return isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63
    if spec.type is FieldType.DATETIME:  # in ``clock.sortable`` form
        return isinstance(value, str) and len(value) == 27 and _sortable(value)
    if spec.type is FieldType.UUID:  # in canonical form
        return canonical_uuid(value)
    return isinstance(value, str)


# ``clock.sortable``'s form: a text of this shape that is a real instant is its own sortable
# form (``_sortable`` is ``clock.sortable(clock.parse(text)) == text``, without the round trip)
_SORTABLE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z", re.ASCII)


def _sortable(text: str) -> bool:
    if _SORTABLE.fullmatch(text) is None:
        return False
    try:
        datetime.fromisoformat(text[:-1])
    except ValueError:
        return False
    return True


def canonical_uuid(value: object) -> bool:
    """Whether ``value`` is a UUID's canonical text (what a ``uuid`` column can equal)."""
    if not isinstance(value, str) or len(value) != 36:
        return False
    try:
        return str(uuid.UUID(value)) == value
    except ValueError:
        return False


@attrs.frozen
class Query:
    """``after``: a cursor of ``order`` and of the list ``list_id`` (``list_of``; "" for a
    list the service reads for itself); a repository refuses another with ``InvalidCursor``."""

    where: tuple[Condition, ...] = ()
    search: str | None = None
    after: Cursor | None = None
    limit: int = DEFAULT_LIMIT
    order: Order = Order()
    list_id: str = ""

    def check_cursor(self) -> None:
        after = self.after
        if after is not None and (after.order != self.order.text or after.list_id != self.list_id):
            raise InvalidCursor()


@attrs.frozen
class Page(Generic[T]):
    items: list[T]
    next_cursor: str | None


def page_of(
    collection: Collection[Any],
    rows: Sequence[T],
    limit: int,
    order: Order = Order(),
    of: str = "",
) -> Page[T]:
    """Cut ``limit + 1`` fetched records (in ``order``) to a page and its cursor, of the list
    ``of`` (``Query.list_id``)."""
    if len(rows) <= limit:
        return Page(list(rows), None)
    items = list(rows[:limit])
    last = items[-1]
    value = collection.columns[order.field].column(last)
    ident = collection.columns["id"].column(last)
    return Page(items, Cursor(value, str(ident), order.text, of).encode())


def replaceable(collection: Collection[T], before: T, after: T) -> None:
    """``ValueError`` unless ``Repository.replace`` may replace ``before`` by ``after``."""
    if collection.lease is not None:
        raise ValueError(f"{collection.name} has a lease: its records are not replaced")
    if collection.row(after)["id"] != collection.row(before)["id"]:
        raise ValueError("a record is replaced by one with its id")


def unique_changed(collection: Collection[T], before: T, after: T) -> bool:
    """Whether ``after`` holds another value than ``before`` in a column of a unique group:
    replacing the one by the other can break a unique group only then (the stored record
    holds ``before``'s values, or nothing is replaced)."""
    columns = collection.columns
    return any(
        columns[name].column(after) != columns[name].column(before)
        for group in collection.unique
        for name in group
    )


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

    async def require(self, missing: DomainError, **equals: object) -> None:
        """That a record whose columns equal the given values is there (as ``first`` would
        find one), in a unit of work that writes, else ``missing`` is raised: a check a change
        depends on, read in its transaction as ``first`` reads it there. A store may put it
        off, to go out with the unit of work's next statement or its commit (PostgreSQL: no
        round trip of its own), which then raises ``missing`` and writes nothing: the unit of
        work can only be rolled back."""
        ...

    async def add(self, item: T) -> None:
        """Insert; ``domain.errors.Conflict`` when the id or a unique column group clashes."""
        ...

    async def add_many(self, items: Sequence[T]) -> None:
        """Insert every item: a few in one statement, many by the store's bulk path (``COPY``
        in PostgreSQL, one ``executemany`` in SQLite), for loading many records at once;
        ``Conflict`` when one clashes, after which the unit of work can only be rolled back. A
        few added to a transaction already begun may go out with the unit of work's next
        statement (a round trip saved): then that statement, or the commit, raises it."""
        ...

    async def update(self, item: T) -> None:
        """Replace the stored record with the same id; ``Conflict`` on a unique clash,
        ``domain.errors.NotFound`` when there is none: an update never inserts, so a record
        another unit of work removed stays removed. A decision to update belongs on a record
        read in the same unit of work, under ``lock`` where others may change it."""
        ...

    async def replace(self, before: T, after: T) -> bool:
        """Replace the stored record with ``after`` (``before``'s id) when it is still
        ``before``, in one statement: a compare-and-set, as race-free as ``update`` under
        ``lock`` and without the lock's read. False (nothing written) when it is not: another
        unit of work changed or removed it meanwhile; then read it under ``lock`` and decide
        again. ``Conflict`` on a unique clash, as ``update``. Not for a collection with a
        ``lease`` (written alone, it leaves the SQL adapters' copy of the record stale)."""
        ...

    async def update_many(self, items: Sequence[T], *, before: Sequence[T] = ()) -> None:
        """``update`` each item, in as few round trips as the store allows; ``NotFound``
        names a record that is not there, and the others may have been replaced by then
        (roll the unit of work back). ``before``: the stored records the items replace, in
        their order, when the unit of work holds them (read under ``lock`` or a claim): where
        no item changes a column of a unique group, no clash is looked for, and as none can be
        missing the change may go out with the unit of work's next statement or its commit."""
        ...

    async def update_leased(
        self, leased: Sequence[tuple[T, datetime]]
    ) -> builtins.list[tuple[T, datetime]]:
        """``update`` each item of ``leased`` whose stored record still holds the lease given
        with it (``Collection.lease``: what a claim leased is written only while that claim
        holds it), in one statement where the store can: a compare-and-set on the lease
        column, with no read before it, and each record compared with the lease it held before
        (of an item given twice with the same lease, the last). Returns the pairs written, in
        id order; a record leased anew or removed meanwhile is left as it is (and one not
        there is no error).
        The statement waits for a unit of work that holds a record and compares its lease as
        that one left it. ``Conflict`` on a unique clash, after which the unit of work can
        only be rolled back."""
        ...

    async def remove(self, ident: object) -> bool: ...

    async def remove_many(self, idents: Sequence[object]) -> int:
        """Remove the records with these ids in one statement; return how many there were."""
        ...

    async def list(self, query: Query) -> Page[T]: ...

    async def claim(self, query: Query) -> builtins.list[T]:
        """Up to ``query.limit`` records of ``query``, in list order, locked against every other
        unit of work that claims them until this one ends; records locked elsewhere are skipped
        (``FOR UPDATE SKIP LOCKED``). Adapters whose units of work never overlap list them."""
        ...

    async def lease(self, idents: Sequence[object], until: datetime) -> int:
        """Set the lease (``Collection.lease``) of the records with these ids to ``until``,
        and nothing else of them, in one statement; return how many there were. A claim
        leases what it took in its own unit of work, without writing the whole records."""
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


class UnitOfWorkEnd:
    """How every adapter's unit of work ends: leaving ``async with`` first ``discard``s what
    was not committed, then ``release``s what ``__aenter__`` took (a lock, a connection), even
    when discarding failed. A unit of work that holds nothing keeps both defaults."""

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            await self.discard()
        finally:
            await self.release()

    async def discard(self) -> None:
        """Undo what this unit of work did and did not commit."""
        return None

    async def release(self) -> None:
        """Give back what ``__aenter__`` took."""
        return None


class UnitOfWorkFactory(Protocol):
    def __call__(self) -> UnitOfWork: ...


async def again_on_clash(work: Callable[[], Awaitable[None]], tries: int = 3) -> None:
    """Run ``work``, a unit of work that adds what it read as missing, again when it clashes
    (``Conflict``) with another process adding the same at the same time (processes starting
    together): the next run finds it there. The last try's clash is raised."""
    for left in range(tries - 1, -1, -1):
        try:
            await work()
            return
        except Conflict:
            if not left:
                raise


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

    def read_stamp(self) -> Hashable | None:
        """A value that stays equal while every record a ``reader()`` may answer from memory
        stays as it is (no commit has changed one, as far as this process can tell), for at
        most ``STAMP_MAX_AGE`` seconds; ``None`` when nothing read may be kept (no such
        memory, or it is switched off). What was computed from such reads alone is still true
        while the stamp is equal to one taken before the reads."""
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
