"""One filter language for every list: ``filter=<field>:<op>:<value>``.

Fields are declared per resource (``FieldSpec``), each with a type that fixes which operators
apply and how the value is read. ``in`` takes values joined by ``|``. The literal ``null``
compares a nullable field with "no value" (``eq`` and ``ne`` only). ``contains`` is a
case-sensitive substring test on string fields; free-text ``search`` is the case-insensitive one.
The service's own conditions may also be ``notIn`` (``Op.NOT_IN``: no value, or none of the
values: where ``in`` does not hold), which the parser refuses as any unknown operator.

A datetime compares at the precision the interface shows it (``FieldSpec.shown`` fraction
digits: milliseconds, unless a record shows more): the record's value is cut to that precision
before it is compared, so ``createdAt:eq:<a record's createdAt as shown>`` finds the record and
``gt`` leaves it out. Conditions the service sets itself (``Condition`` built directly) compare
at the stored precision (microseconds).

A field may take other names (``aliases``) and a function that turns the other spellings of its
values into the one records hold (``normalise``), applied before the value is read.

The parser keeps the text it read, so ``render(parse(s)) == s`` for every accepted ``s`` written
with the field's own name. Every storage adapter evaluates conditions with the semantics of
``Condition.matches``.
"""

from __future__ import annotations

import enum
import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

import attrs

from fourcorner.domain import clock
from fourcorner.domain.errors import InvalidFilter

Scalar = str | int | bool | datetime | None


class FieldType(enum.Enum):
    STRING = "string"
    ENUM = "enum"
    BOOL = "boolean"
    INT = "integer"
    DATETIME = "date-time"
    UUID = "uuid"


class Op(enum.Enum):
    EQ = "eq"
    NE = "ne"
    LT = "lt"
    LTE = "lte"
    GT = "gt"
    GTE = "gte"
    IN = "in"
    CONTAINS = "contains"
    # the service's own: none of the values (the negation of ``in``), which no client writes
    NOT_IN = "notIn"


_ORDERED = frozenset({Op.LT, Op.LTE, Op.GT, Op.GTE})
#: the operators of the client's filter language (``NOT_IN`` is the service's alone)
CLIENT_OPS = frozenset(Op) - {Op.NOT_IN}
OPS_BY_TYPE: Mapping[FieldType, frozenset[Op]] = {
    FieldType.STRING: CLIENT_OPS,
    FieldType.ENUM: frozenset({Op.EQ, Op.NE, Op.IN}),
    FieldType.BOOL: frozenset({Op.EQ, Op.NE}),
    FieldType.INT: CLIENT_OPS - {Op.CONTAINS},
    FieldType.DATETIME: CLIENT_OPS - {Op.CONTAINS},
    FieldType.UUID: frozenset({Op.EQ, Op.NE, Op.IN}),
}


@attrs.frozen
class FieldSpec:
    """A field a list can be filtered on: its JSON name, type and how to read it off a record."""

    name: str
    type: FieldType
    get: Callable[[Any], Scalar] = attrs.field(eq=False, repr=False)
    choices: tuple[str, ...] = ()
    nullable: bool = False
    aliases: tuple[str, ...] = ()
    normalise: Callable[[str], str] | None = attrs.field(default=None, eq=False, repr=False)
    shown: int = 3  # a datetime's fraction digits as the interface shows it

    def read(self, raw: str, expression: str) -> Scalar:
        """The typed value of ``raw`` for this field, or ``InvalidFilter`` naming the problem."""
        if raw == "null" and self.nullable:
            return None
        if self.normalise is not None:
            raw = self.normalise(raw)
        try:
            return _READERS[self.type](self, raw)
        except (ValueError, TypeError) as e:
            raise InvalidFilter(expression=expression, reason=str(e)) from e

    @property
    def compared_digits(self) -> int | None:
        """The fraction digits a client's condition on this datetime compares, or ``None``
        when that is the stored precision (nothing to cut)."""
        if self.type is FieldType.DATETIME and self.shown < clock.SORTABLE_DIGITS:
            return self.shown
        return None

    def column(self, record: Any) -> Scalar:
        """The stored, comparable form of this field of ``record`` (datetimes as sortable text)."""
        return storable(self.get(record))


def storable(value: object) -> Scalar:
    """A value in the form storage columns hold: datetimes as sortable text, enums by value."""
    if type(value) is str:  # the most frequent case, and an enum may subclass str
        return value
    if isinstance(value, datetime):
        return clock.sortable(value)
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if value is None or isinstance(value, str | int | bool):
        return value
    raise TypeError(f"{type(value).__name__} is not a column value")


def _read_string(spec: FieldSpec, raw: str) -> Scalar:
    return raw


def _read_enum(spec: FieldSpec, raw: str) -> Scalar:
    if raw not in spec.choices:
        raise ValueError(f"{spec.name} is one of {', '.join(spec.choices)}, not {raw!r}")
    return raw


def _read_bool(spec: FieldSpec, raw: str) -> Scalar:
    if raw not in ("true", "false"):
        raise ValueError(f"{spec.name} is a boolean: true or false, not {raw!r}")
    return raw == "true"


_INT = re.compile("-?[0-9]+")  # ASCII digits: str.isdigit() also takes "²" and "٣"


def _read_int(spec: FieldSpec, raw: str) -> Scalar:
    if not _INT.fullmatch(raw) or len(raw) > 18:
        raise ValueError(f"{spec.name} is an integer, not {raw!r}")
    return int(raw)


def _read_datetime(spec: FieldSpec, raw: str) -> Scalar:
    try:
        return clock.parse(raw)
    except clock.OutOfRange:
        raise ValueError(f"{spec.name} is a timestamp {clock.RANGE}, not {raw!r}") from None
    except ValueError:
        raise ValueError(f"{spec.name} is an ISO 8601 timestamp, not {raw!r}") from None


def _read_uuid(spec: FieldSpec, raw: str) -> Scalar:
    try:
        return str(uuid.UUID(raw))
    except ValueError:
        raise ValueError(f"{spec.name} is a UUID, not {raw!r}") from None


_READERS: Mapping[FieldType, Callable[[FieldSpec, str], Scalar]] = {
    FieldType.STRING: _read_string,
    FieldType.ENUM: _read_enum,
    FieldType.BOOL: _read_bool,
    FieldType.INT: _read_int,
    FieldType.DATETIME: _read_datetime,
    FieldType.UUID: _read_uuid,
}


@attrs.frozen
class Condition:
    field: FieldSpec
    op: Op
    value: Scalar | tuple[Scalar, ...]
    text: str = attrs.field(eq=False)  # the value as written, for rendering
    # a client's condition on a datetime: the fraction digits of the record's value compared
    digits: int | None = attrs.field(default=None, kw_only=True)

    def render(self) -> str:
        return f"{self.field.name}:{self.op.value}:{self.text}"

    @property
    def stored_value(self) -> Scalar | tuple[Scalar, ...]:
        """The value in the form the storage column holds."""
        if isinstance(self.value, tuple):
            return tuple(storable(v) for v in self.value)
        return storable(self.value)

    def matches(self, record: Any) -> bool:
        """Reference semantics, which every storage adapter reproduces."""
        return self.holds(self.field.column(record))

    def holds(self, actual: Scalar) -> bool:
        """Whether a record whose column holds ``actual`` (stored form) meets the condition."""
        if self.digits is not None and isinstance(actual, str):
            actual = clock.coarsen(actual, self.digits)
        return evaluate(self.op, actual, self.stored_value)


def evaluate(op: Op, actual: Scalar, target: Scalar | tuple[Scalar, ...]) -> bool:
    if op is Op.EQ:
        return actual is not None and actual == target if target is not None else actual is None
    if op is Op.NE:
        return actual != target
    if op is Op.IN:
        assert isinstance(target, tuple)
        return actual is not None and actual in target
    if op is Op.NOT_IN:  # exactly where ``in`` does not hold: NULL is none of the values
        assert isinstance(target, tuple)
        return actual is None or actual not in target
    if actual is None or target is None:
        return False
    if op is Op.CONTAINS:
        return isinstance(actual, str) and isinstance(target, str) and target in actual
    a: Any = actual
    t: Any = target
    if op is Op.LT:
        return bool(a < t)
    if op is Op.LTE:
        return bool(a <= t)
    if op is Op.GT:
        return bool(a > t)
    return bool(a >= t)


def parse(expression: str, fields: Mapping[str, FieldSpec]) -> Condition:
    """Parse one ``<field>:<op>:<value>`` against the fields a resource declares."""
    parts = expression.split(":", 2)
    if len(parts) != 3:
        raise InvalidFilter(expression=expression, reason="the form is <field>:<operator>:<value>")
    name, op_text, raw = parts
    spec = fields.get(name) or next((f for f in fields.values() if name in f.aliases), None)
    if spec is None:
        known = ", ".join(sorted(fields)) or "none"
        raise InvalidFilter(
            expression=expression, reason=f"unknown field {name!r}; fields: {known}"
        )
    op = next((o for o in CLIENT_OPS if o.value == op_text), None)
    if op is None:
        ops = " ".join(o.value for o in Op if o in CLIENT_OPS)
        raise InvalidFilter(
            expression=expression, reason=f"unknown operator {op_text!r}; operators: {ops}"
        )
    if op not in OPS_BY_TYPE[spec.type]:
        raise InvalidFilter(
            expression=expression,
            reason=f"operator {op.value} does not apply to the {spec.type.value} field {name}",
        )
    if op is Op.IN:
        values = tuple(spec.read(v, expression) for v in raw.split("|"))
        if any(v is None for v in values):
            raise InvalidFilter(expression=expression, reason="in takes values, not null")
        return Condition(spec, op, values, raw, digits=spec.compared_digits)
    value = spec.read(raw, expression)
    if value is None and op not in (Op.EQ, Op.NE):
        raise InvalidFilter(expression=expression, reason="null compares only with eq and ne")
    return Condition(spec, op, value, raw, digits=spec.compared_digits)


def parse_all(expressions: Iterable[str], fields: Mapping[str, FieldSpec]) -> tuple[Condition, ...]:
    return tuple(parse(e, fields) for e in expressions)


def fields(*specs: FieldSpec) -> dict[str, FieldSpec]:
    return {s.name: s for s in specs}
