"""List requests as the interface takes them: filters, search, sort, cursor and limit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from fourcorner.application.storage import DEFAULT_LIMIT, MAX_LIMIT, Collection, Cursor, Query
from fourcorner.domain import filtering
from fourcorner.domain.errors import InvalidInput
from fourcorner.domain.filtering import Condition


@attrs.frozen
class ListRequest:
    filters: tuple[str, ...] = ()
    search: str | None = None
    cursor: str | None = None
    limit: int | None = None
    sort: str | None = None  # "<field>" or "-<field>"; None: the collection's default


def build_query(
    collection: Collection[Any],
    request: ListRequest,
    *,
    scope: Sequence[Condition] = (),
    default_limit: int = DEFAULT_LIMIT,
) -> Query:
    limit = default_limit if request.limit is None else request.limit
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput.one("limit", f"limit is between 1 and {MAX_LIMIT}")
    conditions = filtering.parse_all(request.filters, collection.filters)
    order = collection.order(request.sort)
    spec = collection.columns[order.field]
    after = Cursor.decode(request.cursor, order, spec) if request.cursor else None
    search = request.search.strip() if request.search else None
    return Query(
        where=(*scope, *conditions), search=search or None, after=after, limit=limit, order=order
    )


def condition(collection: Collection[Any], field: str, op: filtering.Op, value: Any) -> Condition:
    """A condition the service sets itself, on any column (clients may not filter on all)."""
    spec = collection.columns[field]
    stored = filtering.storable(value)
    return Condition(spec, op, stored, str(stored))


def equals(collection: Collection[Any], field: str, value: Any) -> Condition:
    """A scope condition such as ``orgId = ...``."""
    return condition(collection, field, filtering.Op.EQ, value)


def one_of(collection: Collection[Any], field: str, values: Sequence[Any]) -> Condition:
    """``field`` in ``values``, set by the service."""
    spec = collection.columns[field]
    stored = tuple(filtering.storable(v) for v in values)
    return Condition(spec, filtering.Op.IN, stored, "|".join(str(v) for v in stored))
