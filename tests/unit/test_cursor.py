"""List cursors: what the service encodes it reads back, and any other text is refused with
``InvalidCursor`` (never another error, never a value a store cannot compare with)."""

from __future__ import annotations

import base64
import contextlib
import json
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fourcorner.application import listing
from fourcorner.application import storage as storage_module
from fourcorner.application.collections import MEMBERS, WEBHOOKS
from fourcorner.application.storage import Cursor, Order, Query
from fourcorner.domain import clock
from fourcorner.domain.errors import InvalidCursor
from fourcorner.domain.filtering import FieldSpec, FieldType

INT = FieldSpec("size", FieldType.INT, lambda r: r)
TEXT = FieldSpec("name", FieldType.STRING, lambda r: r)
WHEN = FieldSpec("createdAt", FieldType.DATETIME, lambda r: r)
FLAG = FieldSpec("isEnabled", FieldType.BOOL, lambda r: r)
IDS = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=200)
VALUES = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=50)
)


def crafted(*parts: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(parts)).encode()).decode().rstrip("=")


LISTS = st.just("") | st.text("0123456789abcdef", min_size=16, max_size=16)


@given(
    order=st.sampled_from(["createdAt", "-createdAt", "name", "-size"]),
    value=VALUES,
    ident=IDS,
    of=LISTS,
)
def test_what_is_encoded_decodes_to_itself(order: str, value: object, ident: str, of: str) -> None:
    cursor = Cursor(value, ident, order, of)  # type: ignore[arg-type]
    field = order.lstrip("-")
    assert Cursor.decode(cursor.encode(), Order(field, order.startswith("-"))) == cursor


@given(st.text(max_size=300))
def test_any_text_is_a_cursor_or_refused(text: str) -> None:
    with contextlib.suppress(InvalidCursor):
        Cursor.decode(text, Order(), WHEN)


@pytest.mark.parametrize(
    ("text", "order", "spec"),
    [
        (crafted("size", 2**63, "a", ""), Order("size"), INT),
        (crafted("size", -(2**63) - 1, "a", ""), Order("size"), INT),
        (crafted("size", True, "a", ""), Order("size"), INT),
        (crafted("size", "1", "a", ""), Order("size"), INT),
        (crafted("isEnabled", 1, "a", ""), Order("isEnabled"), FLAG),
        (crafted("name", "\ud800", "a", ""), Order("name"), TEXT),
        (crafted("name", "a\x00", "a", ""), Order("name"), TEXT),
        (crafted("name", ["a"], "a", ""), Order("name"), TEXT),
        (crafted("name", "a", "", ""), Order("name"), TEXT),
        (crafted("name", "a", "x" * 201, ""), Order("name"), TEXT),
        (crafted("-name", "a", "a", ""), Order("name"), TEXT),
        (crafted("createdAt", "2026-01-01", "a", ""), Order(), WHEN),
        (crafted("createdAt", None, "a", ""), Order(), WHEN),
        (crafted("createdAt", "2026-01-02T10:00:00.000000Z", ""), Order(), WHEN),
        # the list it belongs to: 16 hex digits or none, and always there (a cursor of the
        # form before lists were named is refused, so none of any list passes unchecked)
        (crafted("createdAt", "2026-01-02T10:00:00.000000Z", "a"), Order(), WHEN),
        (crafted("createdAt", "2026-01-02T10:00:00.000000Z", "a", None), Order(), WHEN),
        (crafted("createdAt", "2026-01-02T10:00:00.000000Z", "a", "0" * 15), Order(), WHEN),
        (crafted("createdAt", "2026-01-02T10:00:00.000000Z", "a", "G" * 16), Order(), WHEN),
        (crafted("createdAt", "2026-01-02T10:00:00.000000Z", "a", "0" * 17), Order(), WHEN),
        (crafted("createdAt", "2026-01-02T10:00:00.000000Z", "a", "", ""), Order(), WHEN),
        ("x" * 5000, Order(), WHEN),
        (base64.urlsafe_b64encode(b"2026-01-02T10:00:00.000000Z|a").decode(), Order(), WHEN),
    ],
)
def test_crafted_cursors_are_refused(text: str, order: Order, spec: FieldSpec) -> None:
    with pytest.raises(InvalidCursor):
        Cursor.decode(text, order, spec)


def reference_sortable(text: str) -> bool:
    """What a cursor's time must be: ``clock.sortable``'s own form of an instant."""
    try:
        return clock.sortable(clock.parse(text)) == text
    except ValueError:
        return False


SHAPED = st.from_regex(r"\A\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z\Z")


@given(st.datetimes() | st.datetimes(timezones=st.timezones()))
def test_every_sortable_time_is_a_cursors_time(moment: datetime) -> None:
    text = clock.sortable(moment if moment.tzinfo else moment.replace(tzinfo=UTC))
    assert storage_module._sortable(text)


@given(SHAPED | st.text(max_size=40) | st.builds(lambda s: s + "Z", SHAPED))
def test_a_cursors_time_is_checked_as_its_round_trip_checks_it(text: str) -> None:
    assert storage_module._sortable(text) == reference_sortable(text)


@given(
    scope=st.lists(st.tuples(st.sampled_from(["orgId", "status"]), st.text(max_size=8))),
    owner=st.text(max_size=8),
)
def test_a_query_takes_only_cursors_of_its_own_list(
    scope: list[tuple[str, str]], owner: str
) -> None:
    """A cursor made for a list (its collection, the service's conditions and owner) goes
    back into a query of that list only; any other list refuses it, whatever its sort."""
    conditions = [listing.equals(MEMBERS, field, value) for field, value in scope]
    mine = storage_module.list_of(MEMBERS, conditions, owner)
    cursor = Cursor.decode(Cursor("2026-01-02T10:00:00.000000Z", "a", "createdAt", mine).encode())
    Query(after=cursor, list_id=mine).check_cursor()
    others = [
        storage_module.list_of(WEBHOOKS, conditions, owner),
        storage_module.list_of(MEMBERS, conditions, owner + "x"),
        storage_module.list_of(MEMBERS, [*conditions, listing.equals(MEMBERS, "orgId", "o")]),
        "",
    ]
    for other in others:
        assert other != mine
        with pytest.raises(InvalidCursor):
            Query(after=cursor, list_id=other).check_cursor()
