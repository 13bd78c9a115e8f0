"""The places where SQLite and PostgreSQL spell the same thing differently."""

from __future__ import annotations

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

    def column_type(self, field_type: FieldType) -> str:
        if field_type is FieldType.BOOL:
            return "INTEGER"  # 0 and 1 in both dialects
        if field_type is FieldType.INT:
            return self.integer
        return self.text  # strings, enum values, UUIDs and sortable datetimes

    def contains(self, column: str) -> str:
        return f"{self.contains_fn}({column}, {self.param}) > 0"

    def param_list(self, count: int) -> str:
        return ", ".join([self.param] * count)


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
)
