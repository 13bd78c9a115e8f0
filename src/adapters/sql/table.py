"""A collection laid out as a table, and the SQL text of every statement on it.

Each collection is one table named after it: a column per ``Collection.columns`` entry (the
field name in snake case, ``legalKey`` → ``legal_key``) holding the value in stored form
(``Collection.row``: enums by value, booleans as 0/1; UUIDs and datetimes as text in SQLite,
canonical and ``clock.sortable``, as ``uuid`` and ``timestamptz`` in PostgreSQL, which read
that text), then ``search_text`` (``Collection.search_text``, lower-cased) and ``data`` (the
whole record as JSON text, kept byte for byte: ``jsonb`` would rewrite its numbers). ``id``
is the primary key; each ``Collection.unique`` group is a UNIQUE constraint; (``created_at``,
``id``) is indexed for keyset pages, and so is (``org_id``, ``created_at``, ``id``) where the
collection has an ``orgId`` column.

A page is sorted as ``application.storage.Order`` says: by one column, NULL first (last when
descending), then by ``id`` in the same direction; its keyset condition follows that order.

Conditions compile to SQL with exactly the semantics of ``domain.filtering.evaluate``:
``eq null`` is ``IS NULL``, ``ne`` is NULL-safe (and ``notIn``, the negation of ``in``, which
is one parameter however many values it has: an array, a JSON array in SQLite, so that its
statement is the same text each time), a comparison with NULL holds for nothing,
``contains`` is a case-sensitive substring test, and text compares in code point order; a
client's condition on a datetime (``Condition.digits``) compares the stored value cut to the
precision the interface shows (``domain.clock.coarsen``), written as a range of the column
itself (``_coarse``) so that its indexes serve it. In PostgreSQL a parameter a ``uuid`` column
cannot hold (not a UUID in canonical form) equals nothing, as it equals no text in SQLite.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

import attrs
import orjson

from fourcorner.adapters.sql.dialect import Dialect
from fourcorner.application.storage import Collection, Cursor, Order, Query, canonical_uuid
from fourcorner.domain import clock
from fourcorner.domain.clock import SORTABLE_DIGITS
from fourcorner.domain.errors import InvalidCursor
from fourcorner.domain.filtering import Condition, FieldType, Op, storable

RESERVED = frozenset({"search_text", "data"})
_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]*$")
_NEVER = "1 = 0"
_COMPARE = {Op.LT: "<", Op.LTE: "<=", Op.GT: ">", Op.GTE: ">="}
_DEFAULT_ORDER = Order()
_TEXT_STORED = frozenset({FieldType.STRING, FieldType.ENUM, FieldType.UUID, FieldType.DATETIME})


def column_name(field: str) -> str:
    """The column of a JSON field name: ``legalKey`` → ``legal_key``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", field).lower()


def sql_value(value: object) -> object:
    """A parameter in stored form; booleans are the integers 0 and 1 in both dialects."""
    if type(value) is str:
        return value
    stored = storable(value)
    return int(stored) if isinstance(stored, bool) else stored


def _q(name: str) -> str:
    return f'"{name}"'


@attrs.frozen
class Statement:
    sql: str
    params: tuple[object, ...]


class Table:
    """The statements on one collection's table in one dialect; the SQL text of a statement
    depends only on its shape, never on values, so drivers can prepare it once."""

    def __init__(self, collection: Collection[Any], dialect: Dialect) -> None:
        if not _IDENTIFIER.match(collection.name):
            raise ValueError(f"collection name {collection.name!r} is not a plain identifier")
        columns = {field: column_name(field) for field in collection.columns}
        for field, column in columns.items():
            if not _IDENTIFIER.match(column) or column in RESERVED:
                raise ValueError(f"{collection.name}.{field} cannot be a column ({column})")
        if len(set(columns.values())) != len(columns):
            raise ValueError(f"two fields of {collection.name} share a column name")
        self.collection = collection
        self.dialect = dialect
        self.columns: Mapping[str, str] = columns
        p = dialect.param
        name = _q(collection.name)
        all_columns = [*columns.values(), "search_text", "data"]
        listed = ", ".join(map(_q, all_columns))
        marks = dialect.param_list(len(all_columns))
        # Identifiers are checked against _IDENTIFIER above; values are always parameters.
        insert = f"INSERT INTO {name} ({listed}) VALUES ({marks})"  # noqa: S608
        self.insert_sql = f"{insert} ON CONFLICT DO NOTHING"
        # a few records in one statement: every row or none (no ON CONFLICT: a clash fails it)
        self._insert_rows = f"INSERT INTO {name} ({listed}) VALUES "  # noqa: S608
        self._row_marks = f"({marks})"
        self._insert_many_sql: dict[int, str] = {}
        # the bulk path (``Executor.bulk``): COPY in PostgreSQL, the plain INSERT in SQLite
        copy = f"COPY {name} ({listed}) FROM STDIN"
        self.bulk_sql = copy if dialect.name == "postgres" else insert
        # Every column but the id, then the id: an update never inserts (0 rows: it is gone).
        self._updated = [i for i, c in enumerate(all_columns) if c != "id"]
        self._id_at = all_columns.index("id")
        updates = ", ".join(f"{_q(all_columns[i])} = {p}" for i in self._updated)
        self.update_sql = f'UPDATE {name} SET {updates} WHERE "id" = {p}'  # noqa: S608
        # ``Repository.replace``: the update when the record is still the one given, its
        # ``data`` that one's (the parameters of ``update_values``, then that ``data``)
        self.replace_sql = f'{self.update_sql} AND "data" = {p}'
        # Many records in one statement (PostgreSQL): the rows of ``update_values`` as one
        # JSON array parameter, each row an array read by position and cast to its column's
        # type, joined on id. One parameter, so the driver encodes no value on its own.
        self.update_many_sql: str | None = None
        if dialect.name == "postgres":
            fields = {column: field for field, column in columns.items()}
            order = [*(all_columns[i] for i in self._updated), "id"]
            typed = {
                c: f"(r.v->>{n})::{_element_type(collection, fields.get(c))}"
                for n, c in enumerate(order)
            }
            sets = ", ".join(
                f"{_q(all_columns[i])} = {typed[all_columns[i]]}" for i in self._updated
            )
            self.update_many_sql = (
                f"UPDATE {name} AS t SET {sets}"  # noqa: S608
                f' FROM json_array_elements({p}::json) AS r(v) WHERE t."id" = {typed["id"]}'
            )
        # ``Repository.update_leased``: an update while the lease column holds the lease
        # given (a parameter after those of ``update_values``); in PostgreSQL many in one
        # statement, each row of ``update_many_values`` followed by that lease and the row's
        # position, which the statement returns for each record written. Its records are
        # locked in id order first (``held``), as ``lock_many`` locks them: the join alone
        # locks them in its plan's order (a hash join probing the table: the rows' order on
        # disk), and a unit of work locking some of them in id order meanwhile deadlocks it.
        self.update_leased_sql: str | None = None
        self.update_leased_many_sql: str | None = None
        if collection.lease is not None:
            lease = _q(columns[collection.lease])
            self.update_leased_sql = f"{self.update_sql} AND {lease} = {p}"
            if self.update_many_sql is not None:
                at = len(self._updated) + 1  # after the updated columns and the id
                self.update_leased_many_sql = (
                    f"WITH r AS MATERIALIZED (SELECT v FROM json_array_elements({p}::json) AS e(v)),"  # noqa: S608
                    f' held AS MATERIALIZED (SELECT "id" FROM {name}'
                    f' WHERE "id" IN (SELECT {typed["id"]} FROM r) ORDER BY "id" FOR UPDATE)'
                    f" UPDATE {name} AS t SET {sets} FROM r, held"
                    f' WHERE held."id" = {typed["id"]} AND t."id" = held."id"'
                    f" AND t.{lease} = (r.v->>{at})::timestamptz"
                    f" RETURNING (r.v->>{at + 1})::integer"
                )
        # a record is read as its ``data`` and, where the collection has a lease, the lease's
        # column: ``Repository.lease`` writes that column alone
        self.lease_attribute = collection.lease_attribute if collection.lease else None
        read = f'"data", {_q(columns[collection.lease])}' if collection.lease else '"data"'
        self.get_sql = f'SELECT {read} FROM {name} WHERE "id" = {p}'  # noqa: S608
        self.delete_sql = f'DELETE FROM {name} WHERE "id" = {p}'  # noqa: S608
        self._select = f"SELECT {read} FROM {name}"  # noqa: S608
        self._count = f"SELECT count(*) FROM {name}"  # noqa: S608
        self._order = ' ORDER BY "created_at", "id"'
        self._select_sql: dict[tuple[tuple[str, ...], bool], str] = {}
        # the fields whose parameters must be UUIDs (PostgreSQL ``uuid`` columns)
        self._uuids = frozenset(
            field
            for field, spec in collection.columns.items()
            if dialect.typed_uuids and spec.type is FieldType.UUID
        )
        # Records decoded from their stored JSON, by that JSON: records are immutable, so the
        # same text always decodes to an equal record (bounded; cleared when full).
        self.decoded: dict[str, Any] = {}
        # whether this process's last claim of these records found any (``SqlRepository.claim``
        # asks first, with a plain read, only after one that found none)
        self.claim_found = False

    @property
    def name(self) -> str:
        return self.collection.name

    def insert_many_sql(self, count: int) -> str:
        """One ``INSERT`` of ``count`` rows (the parameters of ``values``, one row after the
        other), which a clash fails whole."""
        sql = self._insert_many_sql.get(count)
        if sql is None:
            sql = self._insert_many_sql[count] = self._insert_rows + ", ".join(
                [self._row_marks] * count
            )
        return sql

    def values(self, item: Any, data: str) -> tuple[object, ...]:
        """The parameters of ``insert_sql`` for ``item`` (JSON ``data``)."""
        row = self.collection.row(item)
        return (
            *(sql_value(row[field]) for field in self.columns),
            self.collection.search_text(item),
            data,
        )

    def update_values(self, item: Any, data: str) -> tuple[object, ...]:
        """The parameters of ``update_sql`` for ``item`` (JSON ``data``)."""
        values = self.values(item, data)
        return (*(values[i] for i in self._updated), values[self._id_at])

    @staticmethod
    def update_many_values(rows: Sequence[Sequence[object]]) -> tuple[str] | None:
        """The parameter of ``update_many_sql``: rows of ``update_values`` as a JSON array;
        ``None`` when one holds what JSON cannot (an integer past 64 bits, a lone surrogate),
        to be written one row after another."""
        try:
            return (orjson.dumps(rows).decode(),)
        except orjson.JSONEncodeError:
            return None

    def key(self, ident: object) -> str | None:
        """The parameter of an id: ``None`` (equal to nothing) for one the column cannot hold."""
        text = str(ident)
        if "id" in self._uuids and not canonical_uuid(text):
            return None
        return text

    def param(self, field: str, value: object) -> object:
        """``value`` as a parameter compared with ``field``'s column; ``None`` (equal to
        nothing) for a value the column cannot hold."""
        stored = sql_value(value)
        if field in self._uuids and stored is not None and not canonical_uuid(stored):
            return None
        return stored

    def column(self, field: str) -> str:
        if field not in self.columns:
            raise KeyError(f"{field} is not a column of {self.collection.name}")
        return _q(self.columns[field])

    # --- reads ---------------------------------------------------------------------------

    def _equals(self, equals: Mapping[str, object]) -> tuple[list[str], list[object]]:
        p = self.dialect.param
        clauses = [f"{self.column(field)} = {p}" for field in equals]
        return clauses, [self.param(f, v) for f, v in equals.items()]

    def select(self, equals: Mapping[str, object], *, first: bool = False) -> Statement:
        """Records whose columns equal ``equals`` (a NULL equals nothing), in list order."""
        shape = (tuple(equals), first)
        sql = self._select_sql.get(shape)
        if sql is None:
            clauses, _ = self._equals(equals)
            limit = " LIMIT 1" if first else ""
            sql = self._select_sql[shape] = self._select + _where(clauses) + self._order + limit
        return Statement(sql, tuple(self.param(f, v) for f, v in equals.items()))

    def count(self, equals: Mapping[str, object]) -> Statement:
        clauses, params = self._equals(equals)
        return Statement(self._count + _where(clauses), tuple(params))

    def page(self, query: Query) -> Statement:
        """One keyset page of ``query``, with one record more than the limit."""
        statement = self._query(query)
        return Statement(statement.sql, (*statement.params, query.limit + 1))

    def lock(self, ident: object) -> Statement:
        """One record by id, locked for this transaction (PostgreSQL ``FOR UPDATE``)."""
        statement = self.select({"id": ident}, first=True)
        lock = " FOR UPDATE" if self.dialect.skip_locked else ""
        return Statement(statement.sql + lock, statement.params)

    def delete_many(self, idents: Sequence[object]) -> Statement:
        """Remove the records with these ids (at least one)."""
        ids, values = self._ids(idents)
        sql = f"DELETE FROM {_q(self.collection.name)} WHERE {ids}"  # noqa: S608
        return Statement(sql, values)

    def _ids(self, idents: Sequence[object]) -> tuple[str, tuple[object, ...]]:
        """``"id" IN (...)`` of these ids (at least one) and its parameters, in id order."""
        keys = sorted({k for k in map(self.key, idents) if k is not None})
        values = tuple(keys) if keys else (None,)
        return f'"id" IN ({self.dialect.param_list(len(values))})', values

    def lease(self, idents: Sequence[object], until: object) -> Statement:
        """Set the lease column (``Collection.lease``) of the records with these ids (at
        least one) to ``until``."""
        if self.collection.lease is None:
            raise ValueError(f"{self.name} has no lease")
        ids, values = self._ids(idents)
        column = self.column(self.collection.lease)
        sql = f"UPDATE {_q(self.name)} SET {column} = {self.dialect.param} WHERE {ids}"  # noqa: S608
        return Statement(sql, (sql_value(until), *values))

    def lock_many(self, idents: Sequence[object]) -> Statement:
        """The records with these ids, in id order, locked for this transaction."""
        ids, values = self._ids(idents)
        lock = " FOR UPDATE" if self.dialect.skip_locked else ""
        return Statement(f'{self._select} WHERE {ids} ORDER BY "id"{lock}', values)

    def claim(self, query: Query) -> Statement:
        """Up to ``query.limit`` records, locked for this transaction, skipping locked ones
        (PostgreSQL; SQLite transactions of one process never overlap)."""
        statement = self._query(query)
        return Statement(statement.sql + self.dialect.skip_locked, (*statement.params, query.limit))

    def peek(self, query: Query) -> Statement:
        """Whether ``claim`` would find a record, asked without taking locks: ``1`` if one is
        there (its keyset and order aside: any record matching will do)."""
        clauses, params = self._clauses(query)
        name = _q(self.collection.name)
        return Statement(f"SELECT 1 FROM {name}{_where(clauses)} LIMIT 1", tuple(params))  # noqa: S608

    def _query(self, query: Query) -> Statement:
        clauses, params = self._clauses(query)
        order = self._order if query.order == _DEFAULT_ORDER else self._order_by(query.order)
        sql = f"{self._select}{_where(clauses)}{order} LIMIT {self.dialect.param}"
        return Statement(sql, tuple(params))

    def _clauses(self, query: Query) -> tuple[list[str], list[object]]:
        """The conditions of ``query`` (its filters, search and keyset) and their values."""
        d = self.dialect
        clauses: list[str] = []
        params: list[object] = []
        for condition in query.where:
            sql, values = self.condition(condition)
            clauses.append(sql)
            params.extend(values)
        if query.search:
            clauses.append(d.contains('"search_text"'))
            params.append(query.search.lower())
        if query.after is not None:
            query.check_cursor()
            sql, values = self._after(query.order, query.after)
            clauses.append(sql)
            params.extend(values)
        return clauses, params

    def _order_by(self, order: Order) -> str:
        way = "DESC" if order.descending else "ASC"
        if order.field == "id":
            return f' ORDER BY "id" {way}'
        nulls = ""  # createdAt is never NULL: no NULLS clause, so its indexes serve the sort
        if order.field != "createdAt":
            nulls = " NULLS LAST" if order.descending else " NULLS FIRST"
        return f' ORDER BY {self.column(order.field)} {way}{nulls}, "id" {way}'

    def _after(self, order: Order, cursor: Cursor) -> tuple[str, Sequence[object]]:
        """The records after ``cursor`` in ``order`` (see ``Order.after``)."""
        p = self.dialect.param
        beyond = "<" if order.descending else ">"
        if self.key(cursor.id) is None:
            raise InvalidCursor()  # not made by this service: its records' ids are UUIDs
        if order.field == "id":
            return f'"id" {beyond} {p}', [cursor.id]
        column = self.column(order.field)
        value = sql_value(cursor.value)
        if value is not None and self.param(order.field, value) is None:
            raise InvalidCursor()
        if order.field == "createdAt":
            return f'({column}, "id") {beyond} ({p}, {p})', [value, cursor.id]
        if value is None:  # NULLs come first: the rest of them, then every value
            if order.descending:
                return f'{column} IS NULL AND "id" < {p}', [cursor.id]
            return f'({column} IS NULL AND "id" > {p}) OR {column} IS NOT NULL', [cursor.id]
        later = f'{column} {beyond} {p} OR ({column} = {p} AND "id" {beyond} {p})'
        if order.descending:  # and then the NULLs
            return f"{later} OR {column} IS NULL", [value, value, cursor.id]
        return later, [value, value, cursor.id]

    def condition(self, condition: Condition) -> tuple[str, Sequence[object]]:
        """``condition`` as a SQL predicate that holds exactly where ``evaluate`` does."""
        name = condition.field.name
        column = self.column(name)
        kind = self.collection.columns[name].type
        op = condition.op
        value = condition.stored_value
        d = self.dialect
        p = d.param
        if condition.digits is not None:
            return self._coarse(column, condition.digits, op, value)
        if name in self._uuids and op is not Op.CONTAINS:
            # a value a uuid column cannot hold equals nothing (and differs from everything)
            kept = value if isinstance(value, tuple) else (value,)
            kept = tuple(v for v in kept if v is None or canonical_uuid(v))
            if not isinstance(value, tuple) and not kept:
                return ("1 = 1" if op is Op.NE or op is Op.NOT_IN else _NEVER), ()
            value = kept if isinstance(value, tuple) else value
        if op is Op.IN:
            values = value if isinstance(value, tuple) else (value,)
            if not values:
                return _NEVER, ()
            return f"{column} IN ({d.param_list(len(values))})", [sql_value(v) for v in values]
        if op is Op.NOT_IN:  # NULL equals none of them: it neither holds nor is needed
            values = value if isinstance(value, tuple) else (value,)
            params = [sql_value(v) for v in values if v is not None and _in_range(v)]
            if not params:
                return "1 = 1", ()
            element = _element_type(self.collection, name)
            return d.none_of(column, element), [d.values(params)]
        if isinstance(value, tuple):
            return ("1 = 1" if op is Op.NE else _NEVER), ()  # a scalar never equals a tuple
        if op is Op.EQ:
            return (
                (f"{column} IS NULL", ())
                if value is None
                else (f"{column} = {p}", [sql_value(value)])
            )
        if op is Op.NE:
            if value is None:
                return f"{column} IS NOT NULL", ()
            return f"{column} {d.distinct} {p}", [sql_value(value)]
        if value is None:
            return _NEVER, ()
        if op is Op.CONTAINS:
            if not isinstance(value, str) or kind not in _TEXT_STORED:
                return _NEVER, ()
            return d.contains(d.as_text(column, kind)), [value]
        return f"{column} {_COMPARE[op]} {p}", [sql_value(value)]

    def _coarse(
        self, column: str, digits: int, op: Op, value: object
    ) -> tuple[str, Sequence[object]]:
        """``coarsen(column, digits) <op> value`` as conditions on the column itself: the
        column cut to ``digits`` (a multiple of one unit) compares with ``value`` exactly as
        the column compares with the unit boundaries around ``value``."""
        p = self.dialect.param
        many = op is Op.IN or op is Op.NOT_IN
        if not many and isinstance(value, tuple):
            return ("1 = 1" if op is Op.NE else _NEVER), ()  # a scalar never equals a tuple
        if many or op is Op.EQ or op is Op.NE:
            negated = op is Op.NE or op is Op.NOT_IN
            values = value if isinstance(value, tuple) else (value,)
            if not many and value is None:
                return (f"{column} IS NULL" if op is Op.EQ else f"{column} IS NOT NULL"), ()
            # only a value on the grid of units equals a cut one
            spans = [_span(v, digits) for v in values if isinstance(v, str)]
            ranges = [(s[0], s[2]) for s in spans if s is not None and s[0] == s[1]]
            if not ranges:
                return ("1 = 1" if negated else _NEVER), ()
            tests, params = [], []
            for start, end in ranges:
                if end is None:
                    tests.append(f"{column} >= {p}")
                    params.append(start)
                else:
                    tests.append(f"({column} >= {p} AND {column} < {p})")
                    params += [start, end]
            held = " OR ".join(tests)
            if negated:  # NULL differs from every value
                return f"{column} IS NULL OR NOT ({held})", params
            return held, params
        if value is None or isinstance(value, tuple) or not isinstance(value, str):
            return _NEVER, ()
        span = _span(value, digits)
        if span is None:
            return _NEVER, ()
        _, ceiling, after = span
        # cut < v: the column is before the first unit at or after v; cut <= v: before the
        # unit after v's; > and >= are their negations (NULL never holds)
        bound = {Op.LT: ceiling, Op.GTE: ceiling, Op.LTE: after, Op.GT: after}[op]
        if bound is None:  # beyond the last representable unit
            return ((f"{column} IS NOT NULL" if op in (Op.LT, Op.LTE) else _NEVER), ())
        below = op in (Op.LT, Op.LTE)
        return f"{column} {'<' if below else '>='} {p}", [bound]

    def clash(self, group: Sequence[str]) -> str:
        """Another record (id differs) with these values in a unique group."""
        p = self.dialect.param
        tests = " AND ".join(f"{self.column(field)} = {p}" for field in group)
        name = _q(self.collection.name)
        return f'SELECT 1 FROM {name} WHERE {tests} AND "id" <> {p} LIMIT 1'  # noqa: S608

    # --- schema --------------------------------------------------------------------------

    def ddl(self) -> list[str]:
        """The statements that create this table and its indexes (for a new migration)."""
        d = self.dialect
        name = self.collection.name
        lines = []
        for field, column in self.columns.items():
            spec = self.collection.columns[field]
            line = f"{_q(column)} {d.column_type(spec.type)}"
            if field in ("id", "createdAt"):
                line += " NOT NULL"
            if field == "id":
                line += " PRIMARY KEY"
            lines.append(line)
        lines += [f'"search_text" {d.text} NOT NULL', '"data" TEXT NOT NULL']
        for group in self.collection.unique:
            cols = [self.columns[f] for f in group]
            constraint = _q(f"{name}_{'_'.join(cols)}_key")
            lines.append(f"CONSTRAINT {constraint} UNIQUE ({', '.join(map(_q, cols))})")
        body = ",\n    ".join(lines)
        statements = [f"CREATE TABLE {_q(name)} (\n    {body}\n)"]
        keyset = '"created_at", "id"'
        statements.append(
            f"CREATE INDEX {_q(name + '_created_at_id_idx')} ON {_q(name)} ({keyset})"
        )
        if "orgId" in self.columns:
            statements.append(
                f'CREATE INDEX {_q(name + "_org_id_idx")} ON {_q(name)} ("org_id", {keyset})'
            )
        return statements


def _element_type(collection: Collection[Any], field: str | None) -> str:
    """The PostgreSQL type of a column's values (``search_text`` and ``data``: ``None``)."""
    kind = collection.columns[field].type if field is not None else FieldType.STRING
    return {
        FieldType.BOOL: "integer",
        FieldType.INT: "bigint",
        FieldType.UUID: "uuid",
        FieldType.DATETIME: "timestamptz",
    }.get(kind, "text")


def ddl_script(collections: Sequence[Collection[Any]], dialect: Dialect) -> str:
    """The text of a migration file that creates the tables of ``collections``."""
    return (
        "".join(f"{s};\n\n" for c in collections for s in Table(c, dialect).ddl()).rstrip() + "\n"
    )


class Tables:
    """Each collection's ``Table`` in one dialect, built once on first use."""

    def __init__(self, dialect: Dialect) -> None:
        self._dialect = dialect
        self._by_name: dict[str, Table] = {}

    def __call__(self, collection: Collection[Any]) -> Table:
        table = self._by_name.get(collection.name)
        if table is None or table.collection is not collection:
            table = self._by_name[collection.name] = Table(collection, self._dialect)
        return table


def _span(value: str, digits: int) -> tuple[str, str | None, str | None] | None:
    """For a sortable datetime ``value`` and units of ``digits`` fraction digits: the unit
    ``value`` is in (its start, ``coarsen``), the first unit start at or after ``value``, and
    the start of the unit after ``value``'s (``None`` past the largest datetime); ``None``
    when ``value`` is no sortable datetime."""
    if not 0 <= digits < SORTABLE_DIGITS:
        raise ValueError(f"cannot compare a datetime at {digits} fraction digits")
    try:
        instant = clock.parse(value)
    except ValueError:
        return None
    if clock.sortable(instant) != value:
        return None
    unit = 10 ** (SORTABLE_DIGITS - digits)
    floor = instant - timedelta(microseconds=instant.microsecond % unit)
    try:
        after: str | None = clock.sortable(floor + timedelta(microseconds=unit))
    except OverflowError:
        after = None
    ceiling = clock.sortable(floor) if floor == instant else after
    return clock.sortable(floor), ceiling, after


def _in_range(value: object) -> bool:
    """Whether a column may hold ``value``: an integer past 64 bits it may not (it equals
    none, and one parameter of typed values cannot carry it)."""
    return not isinstance(value, int) or isinstance(value, bool) or -(2**63) <= value < 2**63


def _where(clauses: Sequence[str]) -> str:
    return " WHERE " + " AND ".join(f"({c})" for c in clauses) if clauses else ""
