"""The storage adapters under the contract suite, and hypothesis strategies for their records.

``store`` is one opened adapter per parameter (memory, sqlite on a temporary file, postgres in
this run's schema), emptied before the test. ``open_storage`` opens one of a given kind (for
tests that need several at once), and ``samples`` builds strategies for any collection's
records and filter conditions from the record types themselves, so new collections are
covered without new strategies.
"""

from __future__ import annotations

import enum
import pathlib
import sqlite3
import types
import typing
import uuid
from collections import abc
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any

import attrs
import psycopg
import pytest
from hypothesis import strategies as st
from psycopg import sql

from fourcorner.adapters.memory import InMemoryStorage
from fourcorner.adapters.postgres import PostgresStorage
from fourcorner.adapters.sqlite import SqliteStorage
from fourcorner.application.storage import Collection, Storage, UnitOfWork
from fourcorner.domain.filtering import OPS_BY_TYPE, Condition, FieldSpec, FieldType, Op
from fourcorner.domain.text import text_problem
from upgrade import upgraded  # noqa: F401 (a fixture of the upgrade tests)

ADAPTERS = ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]

# --- adapters ------------------------------------------------------------------------------


class StorageUnderTest:
    """An opened adapter of one ``kind``, and how to empty it between tests and examples."""

    def __init__(self, kind: str, storage: Storage) -> None:
        self.kind = kind
        self.storage = storage

    def unit_of_work(self) -> UnitOfWork:
        return self.storage.unit_of_work()

    async def reset(self) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        await self.storage.close()


class _Memory(StorageUnderTest):
    async def reset(self) -> None:
        await self.storage.close()
        self.storage = InMemoryStorage()
        await self.storage.open()


class _Sqlite(StorageUnderTest):
    def __init__(self, storage: SqliteStorage) -> None:
        super().__init__("sqlite", storage)
        self._conn = sqlite3.connect(storage.path, timeout=5)
        rows = self._conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' "
            "AND name NOT LIKE 'sqlite_%' AND name <> 'schema_migrations'"
        )
        self._tables = [r[0] for r in rows]

    async def reset(self) -> None:
        for table in self._tables:
            self._conn.execute(f'DELETE FROM "{table}"')  # noqa: S608
        self._conn.commit()

    async def close(self) -> None:
        self._conn.close()
        await super().close()


class _Postgres(StorageUnderTest):
    def __init__(
        self, storage: PostgresStorage, schema: str, conn: psycopg.AsyncConnection[Any]
    ) -> None:
        super().__init__("postgres", storage)
        self._schema = schema
        self._conn = conn
        self._empty: sql.Composed | None = None

    async def reset(self) -> None:
        if self._empty is None:
            cursor = await self._conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s "
                "AND table_type = 'BASE TABLE' AND table_name <> 'schema_migrations'",
                (self._schema,),
            )
            # DELETE: on a few rows a hundred times faster than TRUNCATE, which makes new files.
            self._empty = sql.SQL("; ").join(
                sql.SQL("DELETE FROM {}").format(sql.Identifier(r[0]))
                for r in await cursor.fetchall()
            )
        await self._conn.execute(self._empty)
        # emptied behind the adapter's back: no commit of its own announces it
        cache = self.storage.cache  # type: ignore[attr-defined]
        if cache is not None:
            cache.invalidate_all()

    async def close(self) -> None:
        await self._conn.close()
        await super().close()


async def open_under_test(
    kind: str, sqlite_path: pathlib.Path, postgres: tuple[str, str] | None
) -> StorageUnderTest:
    """An opened (and migrated), emptied adapter of ``kind``."""
    subject: StorageUnderTest
    if kind == "memory":
        subject = _Memory("memory", InMemoryStorage())
    elif kind == "sqlite":
        sqlite = SqliteStorage(sqlite_path)
        await sqlite.open()
        subject = _Sqlite(sqlite)
    elif kind == "postgres":
        assert postgres is not None
        url, schema = postgres
        pg = PostgresStorage(url, schema=schema)
        await pg.open()
        conn = await psycopg.AsyncConnection.connect(
            url, autocommit=True, options=f"-c search_path={schema}"
        )
        subject = _Postgres(pg, schema, conn)
    else:
        raise ValueError(kind)
    await subject.reset()
    return subject


OpenStorage = Callable[[str], Awaitable[StorageUnderTest]]


@pytest.fixture
def open_storage(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> OpenStorage:
    """``await open_storage(kind)``: an emptied adapter; the caller closes it. Opening the
    same kind again in one test reuses its database (the SQLite file, the run's schema)."""

    async def open_(kind: str) -> StorageUnderTest:
        postgres = None
        if kind == "postgres":
            postgres = request.getfixturevalue("postgres_url_and_schema")
        return await open_under_test(kind, tmp_path / "contract.sqlite", postgres)

    return open_


@pytest.fixture(params=ADAPTERS)
async def store(
    request: pytest.FixtureRequest, open_storage: OpenStorage
) -> AsyncIterator[StorageUnderTest]:
    subject = await open_storage(request.param)
    try:
        yield subject
    finally:
        await subject.close()


# --- strategies ----------------------------------------------------------------------------

T0 = datetime(2026, 1, 2, 10, 0, tzinfo=UTC)
# Few distinct values, so that filters, unique groups and equal createdAt values meet often;
# non-ASCII and astral characters, so that text order is checked byte-wise.
WORDS = ("", "a", "A", "ab", "Ab", "b", "z", "Z", "~", "é", "É", "ä", "ß", "中", "😀", "a😀")
# Text the service accepts at its edge (``domain.text``): no control characters but tab, LF
# and CR, no lone surrogates or noncharacters. Cursors name a record's id, and refuse any other.
CHARACTERS = st.characters(codec="utf-8").filter(lambda c: text_problem(c) is None)
TEXTS = st.sampled_from(WORDS) | st.text(CHARACTERS, max_size=8)
NAMES = st.sampled_from(("acme", "Acme Corp", "ÉCOLE", "zebra")) | st.text(
    CHARACTERS, min_size=1, max_size=8
)
DATETIMES = st.sampled_from(
    (T0, T0 + timedelta(microseconds=1), T0 + timedelta(seconds=1), T0 - timedelta(days=400))
) | st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)
UUIDS = st.sampled_from([uuid.UUID(int=i) for i in (1, 2, 3)]) | st.uuids()
INTS = st.sampled_from((0, 1, -1)) | st.integers(-(2**53), 2**53)


# Values of fields typed ``Any``: what JSON holds (a payload, say).
JSON = st.recursive(
    st.none() | st.booleans() | INTS | st.floats(allow_nan=False, allow_infinity=False) | TEXTS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXTS, inner, max_size=3),
    max_leaves=6,
)


def _for_type(tp: Any) -> st.SearchStrategy[Any]:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*(_for_type(a) for a in args))
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return st.lists(_for_type(args[0]), max_size=2).map(tuple)
        return st.tuples(*(_for_type(a) for a in args))
    if origin in (list, abc.Sequence, abc.MutableSequence):
        return st.lists(_for_type(args[0]), max_size=2)
    if origin in (frozenset, abc.Set):
        return st.frozensets(_for_type(args[0]), max_size=2)
    if origin in (dict, abc.Mapping, abc.MutableMapping):
        return st.dictionaries(_for_type(args[0]), _for_type(args[1]), max_size=3)
    if tp is Any:
        return JSON
    if tp is type(None):
        return st.none()
    if tp is float:
        return st.floats(allow_nan=False, allow_infinity=False)
    if tp is date:
        return st.dates()
    if tp is bytes:
        return st.binary(max_size=8)
    if tp is str:
        return TEXTS
    if tp is bool:
        return st.booleans()
    if tp is int:
        return INTS
    if tp is uuid.UUID:
        return UUIDS
    if tp is datetime:
        return DATETIMES
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return st.sampled_from(list(tp))
    if attrs.has(tp):
        return instances(tp)
    raise TypeError(f"no strategy for {tp!r}")


def _build(cls: type[Any], kwargs: dict[str, Any]) -> Any:
    try:
        return cls(**kwargs)
    except ValueError:
        return None  # refused by the class's own validation (a member's role, say)


def instances(cls: type[Any]) -> st.SearchStrategy[Any]:
    """Any valid instance of an attrs class, every field drawn (defaults included)."""
    hints = typing.get_type_hints(cls)
    fields = {f.alias: _for_type(hints[f.name]) for f in attrs.fields(cls) if f.init}
    if "id" in fields and hints["id"] is str:
        fields["id"] = NAMES  # ids are never empty
    return (
        st.fixed_dictionaries(fields)
        .map(lambda kw: _build(cls, kw))
        .filter(lambda item: item is not None)
    )


def sort_key(collection: Collection[Any], item: Any) -> tuple[str, str]:
    return (
        str(collection.columns["createdAt"].column(item)),
        str(collection.columns["id"].column(item)),
    )


def _unique_keys(collection: Collection[Any]) -> tuple[Callable[[Any], object], ...]:
    def key(group: tuple[str, ...]) -> Callable[[Any], object]:
        def of(item: Any) -> object:
            values = tuple(collection.columns[c].column(item) for c in group)
            return object() if None in values else values  # a NULL never clashes

        return of

    return (
        lambda item: collection.columns["id"].column(item),
        *(key(g) for g in collection.unique),
    )


def _fresh(spec: FieldSpec) -> st.SearchStrategy[Any]:
    by_type: dict[FieldType, st.SearchStrategy[Any]] = {
        FieldType.STRING: TEXTS,
        FieldType.ENUM: st.sampled_from(spec.choices) if spec.choices else TEXTS,
        FieldType.BOOL: st.booleans(),
        FieldType.INT: INTS,
        FieldType.DATETIME: DATETIMES,
        FieldType.UUID: UUIDS.map(str),
    }
    return by_type[spec.type]


class Samples:
    """Strategies for any collection (a fixture, so every test module can reach them)."""

    records = staticmethod(lambda collection: instances(collection.type))

    @staticmethod
    def record_lists(
        collection: Collection[Any], min_size: int = 0, max_size: int = 10
    ) -> st.SearchStrategy[Any]:
        """Records that can all be stored together: ids and unique groups distinct."""
        return st.lists(
            instances(collection.type),
            min_size=min_size,
            max_size=max_size,
            unique_by=_unique_keys(collection),
        )

    @staticmethod
    def conditions(
        collection: Collection[Any], items: Sequence[Any]
    ) -> st.SearchStrategy[Condition]:
        """Conditions on any column, with values often taken from ``items``."""
        return st.sampled_from(sorted(collection.columns)).flatmap(
            lambda name: _conditions_on(collection.columns[name], items)
        )

    @staticmethod
    def needles(collection: Collection[Any], items: Sequence[Any]) -> st.SearchStrategy[Any]:
        """Free-text searches: mostly none (so that conditions decide), else a short piece
        of a record's search text in another case, or any text."""
        texts = [t for t in (collection.search_text(i) for i in items) if t.strip("\x1f")]
        some = TEXTS
        if texts:
            some = st.sampled_from(texts).flatmap(_pieces).flatmap(_recased) | TEXTS
        return _mostly(st.none(), some)


def _mostly(usual: st.SearchStrategy[Any], other: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``usual`` three times in five, ``other`` otherwise."""
    return st.integers(0, 4).flatmap(lambda n: usual if n < 3 else other)


def _pieces(text: str) -> st.SearchStrategy[str]:
    """A piece of one to three characters (short pieces are found in several records)."""
    return st.integers(0, max(0, len(text) - 1)).flatmap(
        lambda start: st.integers(1, 3).map(lambda n: text[start : start + n])
    )


def _recased(text: str) -> st.SearchStrategy[str]:
    return st.sampled_from((text, text.upper(), text.swapcase(), text.title()))


def _shown(value: Any) -> Any:
    """A datetime as the interface shows it (milliseconds), for clients' datetime filters."""
    if isinstance(value, datetime):
        return value.replace(microsecond=value.microsecond // 1000 * 1000)
    return value


def _conditions_on(spec: FieldSpec, items: Sequence[Any]) -> st.SearchStrategy[Condition]:
    seen = [spec.get(i) for i in items]
    if spec.type is FieldType.DATETIME:
        seen += [_shown(v) for v in seen]
    # Mostly values the records hold, so that conditions select some records and not others.
    value = _mostly(st.sampled_from(seen), _fresh(spec)) if seen else _fresh(spec)
    # a client's operators, and the service's own ``notIn`` (of any number of values)
    ops = sorted(OPS_BY_TYPE[spec.type] | {Op.NOT_IN}, key=lambda o: o.value)
    # a client's condition on a datetime compares at the shown precision (Condition.digits)
    digits = st.sampled_from((None, 3, 0)) if spec.type is FieldType.DATETIME else st.none()

    def condition(op: Op) -> st.SearchStrategy[Condition]:
        if op is Op.IN:
            values: st.SearchStrategy[Any] = st.lists(value, min_size=1, max_size=3).map(tuple)
        elif op is Op.NOT_IN:
            values = st.lists(value | st.none(), max_size=4).map(tuple)
        elif op in (Op.EQ, Op.NE):
            values = value | st.none()
        elif op is Op.CONTAINS:
            texts = [s for s in seen if isinstance(s, str) and s]
            values = (st.sampled_from(texts).flatmap(_pieces) | TEXTS) if texts else TEXTS
        else:
            values = value
        return st.tuples(values, digits).map(
            lambda vd: Condition(spec, op, vd[0], str(vd[0]), digits=vd[1])
        )

    return st.sampled_from(ops).flatmap(condition)


@pytest.fixture(scope="session")
def samples() -> type[Samples]:
    return Samples
