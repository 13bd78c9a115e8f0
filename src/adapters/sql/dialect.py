"""The places where SQLite and PostgreSQL spell the same thing differently."""

from __future__ import annotations

import json
from collections.abc import Sequence

import attrs

from fourcorner.domain.filtering import FieldType


@attrs.frozen
class Dialect:
    name: str
    param: str  # the driver's parameter marker
    distinct: str  # NULL-safe "is not equal to"
    contains_fn: str  # substring position, 1-based, 0 when absent; ("", x) is 1
    text: str  # text columns compare byte-wise (code point order), as Python's str does
    integer: str
    skip_locked: str = ""  # what makes a SELECT claim rows other transactions do not hold
    # the types of UUID and datetime columns; SQLite keeps them as text (UUIDs in their
    # canonical form, datetimes in ``clock.sortable`` form)
    uuid: str = "TEXT"
    timestamp: str = "TEXT"

    @property
    def typed_uuids(self) -> bool:
        """Whether UUID columns hold UUIDs, so that a parameter must be one."""
        return self.uuid != self.text

    def column_type(self, field_type: FieldType) -> str:
        if field_type is FieldType.BOOL:
            return "INTEGER"  # 0 and 1 in both dialects
        if field_type is FieldType.INT:
            return self.integer
        if field_type is FieldType.UUID:
            return self.uuid
        if field_type is FieldType.DATETIME:
            return self.timestamp
        return self.text  # strings and enum values

    def as_text(self, column: str, field_type: FieldType) -> str:
        """A column's value as the text ``domain.filtering.storable`` gives (for
        ``contains``): UUIDs in canonical form, datetimes in ``clock.sortable`` form."""
        if field_type is FieldType.UUID and self.uuid != self.text:
            return f"({column}::text)"
        if field_type is FieldType.DATETIME and self.timestamp != self.text:
            return f"""to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')"""
        return column

    def contains(self, column: str) -> str:
        return f"{self.contains_fn}({column}, {self.param}) > 0"

    def param_list(self, count: int) -> str:
        return ", ".join([self.param] * count)

    def none_of(self, column: str, element: str) -> str:
        """``column`` holds no value or none of the values of one parameter (``values``), of
        the PostgreSQL type ``element``: one statement text however many values there are."""
        if self.name == "postgres":
            return f"{column} IS NULL OR {column} <> ALL({self.param}::{element}[])"
        # ``column`` is a table's quoted identifier, never a value
        values = f"SELECT value FROM json_each({self.param})"  # noqa: S608
        return f"{column} IS NULL OR {column} NOT IN ({values})"

    def values(self, values: Sequence[object]) -> object:
        """The one parameter of ``none_of``: an array (PostgreSQL), a JSON array (SQLite)."""
        if self.name == "postgres":
            return list(values)
        return json.dumps(list(values))


SQLITE = Dialect(
    name="sqlite",
    param="?",
    distinct="IS NOT",
    contains_fn="instr",
    text="TEXT",  # BINARY collation: memcmp over UTF-8
    integer="INTEGER",
)

POSTGRES = Dialect(
    name="postgres",
    param="%s",
    distinct="IS DISTINCT FROM",
    contains_fn="strpos",
    text='TEXT COLLATE "C"',
    integer="BIGINT",
    skip_locked=" FOR UPDATE SKIP LOCKED",
    # ``uuid`` orders as its canonical text does (bytes, most significant first), and
    # ``timestamptz`` keeps microseconds, as ``clock.sortable`` does: orders and keyset
    # cursors are those of the text columns they replace (migration 0014)
    uuid="UUID",
    timestamp="TIMESTAMP WITH TIME ZONE",
)
