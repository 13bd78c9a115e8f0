"""List requests as the interface takes them: filters, search, sort, cursor and limit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import attrs

from fourcorner.application.storage import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    Collection,
    Cursor,
    Page,
    Query,
    list_of,
    page_of,
)
from fourcorner.domain import filtering
from fourcorner.domain.errors import InvalidInput
from fourcorner.domain.filtering import Condition

T = TypeVar("T")


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
    owner: object = "",
) -> Query:
    """The query of ``request`` within ``scope``; its cursor must be one of this list
    (``list_of``: the collection, ``scope`` and ``owner``)."""
    limit = default_limit if request.limit is None else request.limit
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput.one("limit", f"limit is between 1 and {MAX_LIMIT}")
    conditions = filtering.parse_all(request.filters, collection.filters)
    order = collection.order(request.sort)
    spec = collection.columns[order.field]
    after = Cursor.decode(request.cursor, order, spec) if request.cursor else None
    search = request.search.strip() if request.search else None
    return Query(
        where=(*scope, *conditions),
        search=search or None,
        after=after,
        limit=limit,
        order=order,
        list_id=list_of(collection, scope, owner),
    )


def select(collection: Collection[T], records: Sequence[T], query: Query) -> Page[T]:
    """A page of ``query`` over ``records`` held in memory (a list the service computes,
    such as the access points an organisation may use), with the semantics every storage
    adapter gives a stored list: conditions, search, order, cursor and limit."""
    query.check_cursor()
    order, after = query.order, query.after
    spec, ident = collection.columns[order.field], collection.columns["id"]
    needle = query.search.lower() if query.search else None

    def key(record: T) -> tuple[tuple[int, Any], str]:
        return order.key(spec.column(record), str(ident.column(record)))

    chosen = [
        r
        for r in records
        if (after is None or order.after(key(r), after))
        and (needle is None or needle in collection.search_text(r))
        and all(c.matches(r) for c in query.where)
    ]
    chosen.sort(key=key, reverse=order.descending)
    return page_of(collection, chosen[: query.limit + 1], query.limit, order, query.list_id)


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


def none_of(collection: Collection[Any], field: str, values: Sequence[Any]) -> Condition:
    """``field`` holds none of ``values`` (or nothing), set by the service: one condition, one
    parameter in SQL, however many values (``Op.NOT_IN``)."""
    spec = collection.columns[field]
    stored = tuple(filtering.storable(v) for v in values)
    return Condition(spec, filtering.Op.NOT_IN, stored, "|".join(str(v) for v in stored))
