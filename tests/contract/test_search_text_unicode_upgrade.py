"""Upgrading a database to migration 0019: the search text of an organisation's events and
members is what the code writes today (``Collection.search_text``): lowered as Python lowers
text, where 0018 lowered ASCII letters only (a member's address with an "Ö" kept it), and an
event's text covers its payload's ``docInstanceId``. From rows stored before 0018 (whose text
0018 filled) and from rows the code wrote between 0018 and 0019."""

from __future__ import annotations

import string
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from fourcorner.application.collections import EVENTS, MEMBERS
from fourcorner.domain.events import EVENT_NAMES, MLS_RECEIVED, TRANSACTION_RECEIVED
from fourcorner.domain.member import Member
from fourcorner.domain.webhook import Event
from upgrade import event_row, member_row

from .test_search_text_upgrade import (
    ORG_A,
    ORG_B,
    ORGS,
    PROPERTY,
    TX_A,
    TX_B,
    Opened,
    before_0018,
    event,
    finds_what_memory_finds,
    member,
    needles,
    old_rows,
    search,
    upgrades,
)

__all__ = ["upgrades"]  # the fixture

UPGRADE = 19  # the migration under test
_ASCII = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def between_0018_and_0019(record: Event | Member) -> str:
    """The text as the code between 0018 and 0019 wrote it: a member's as today, an event's
    without its payload's docInstanceId (the last field today)."""
    if isinstance(record, Member):
        return MEMBERS.search_text(record)
    return EVENTS.search_text(record).rsplit("\x1f", 1)[0]


def by_0018(m: Member) -> str:
    """A member's text as 0018 left it: the earlier text, then the address with its ASCII
    letters lowered only."""
    return f"{before_0018(m)}\x1f{m.email.translate(_ASCII)}"


DOC_A, DOC_B = "Faktura-ÖST-2026-001", "INV-B-7"
EVENTS_STORED = [
    event(
        1,
        ORG_A,
        TRANSACTION_RECEIVED,
        {"id": str(TX_A), "senderId": "0088:5798000000001", "docInstanceId": DOC_A},
    ),
    event(2, ORG_A, MLS_RECEIVED, {"transactionId": str(TX_A), "mlsResponseCode": "AP"}),
    event(3, ORG_B, "transaction.sent", {"id": str(TX_B), "docInstanceId": DOC_B}),
]
MEMBERS_STORED = [
    member(1, ORG_A, "Örjan.Åberg@Exempel.SE", first_name="Örjan", last_name="Åberg"),
    member(2, ORG_A, "ΟΔΥΣΣΕΑΣ@Example.GR"),  # a final sigma at the end of the local part
    member(3, ORG_B, "örjan@b.example"),
]


async def _found(storage: Any) -> None:
    e1, _, e3 = (str(e.id) for e in EVENTS_STORED)
    assert await search(storage, EVENTS, ORG_A, "faktura-öst") == {e1}
    assert await search(storage, EVENTS, ORG_A, "FAKTURA-ÖST-2026") == {e1}
    assert await search(storage, EVENTS, ORG_B, "inv-b-7") == {e3}
    assert await search(storage, EVENTS, ORG_A, "inv-b") == set()  # another organisation's
    m1, m2, m3 = (str(m.id) for m in MEMBERS_STORED)
    assert await search(storage, MEMBERS, ORG_A, "örjan.åberg@exempel.se") == {m1}
    assert await search(storage, MEMBERS, ORG_A, "ÖRJAN") == {m1}
    assert await search(storage, MEMBERS, ORG_A, "οδυσσεας@") == {m2}
    assert await search(storage, MEMBERS, ORG_B, "Örjan@") == {m3}


async def test_rows_stored_before_0018_get_the_text_the_code_writes(upgrades: Opened) -> None:
    async with upgrades(old_rows(EVENTS_STORED, [], MEMBERS_STORED), 18) as (storage, texts):
        assert await texts("events") == {str(e.id): EVENTS.search_text(e) for e in EVENTS_STORED}
        assert await texts("members") == {str(m.id): MEMBERS.search_text(m) for m in MEMBERS_STORED}
        await _found(storage)


async def test_rows_written_between_0018_and_0019_get_the_text_the_code_writes(
    upgrades: Opened,
) -> None:
    rows = [
        *(event_row(e, search_text=between_0018_and_0019(e)) for e in EVENTS_STORED),
        # members as 0018 left them, and one the code wrote after it
        *(member_row(m, search_text=by_0018(m)) for m in MEMBERS_STORED[:2]),
        member_row(MEMBERS_STORED[2], search_text=between_0018_and_0019(MEMBERS_STORED[2])),
    ]
    async with upgrades(rows, UPGRADE) as (storage, texts):
        assert await texts("events") == {str(e.id): EVENTS.search_text(e) for e in EVENTS_STORED}
        assert await texts("members") == {str(m.id): MEMBERS.search_text(m) for m in MEMBERS_STORED}
        await _found(storage)


# any text a person or a document may give: capitals of every script, final sigmas, "İ"
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=8)
PAYLOADS = st.fixed_dictionaries(
    {},
    optional={
        "id": TEXT,
        "senderId": TEXT,
        "receiverId": TEXT,
        "docInstanceId": TEXT | st.integers(0, 9) | st.none(),
    },
)


@st.composite
def stores(draw: st.DrawFn) -> tuple[list[Event], list[Member]]:
    n = draw(st.integers(1, 5))
    events = [
        event(i, draw(ORGS), draw(st.sampled_from(EVENT_NAMES)), draw(PAYLOADS)) for i in range(n)
    ]
    members = [
        member(i, draw(ORGS), draw(TEXT), first_name=draw(TEXT), last_name=draw(TEXT))
        for i in range(n)
    ]
    return events, members


@PROPERTY
@given(stored=stores(), data=st.data())
async def test_any_rows_stored_before_0018_get_the_text_the_code_writes(
    upgrades: Opened, stored: tuple[list[Event], list[Member]], data: Any
) -> None:
    """For any events and members stored before 0018 (any text in their names, addresses and
    payloads), each row's text after 0019 is what ``Collection.search_text`` writes, and a
    search in an organisation finds exactly its records whose text holds the needle."""
    events, members = stored
    async with upgrades(old_rows(events, [], members), 18) as (storage, texts):
        for collection, records in ((EVENTS, events), (MEMBERS, members)):
            written = {str(r.id): collection.search_text(r) for r in records}
            assert await texts(collection.name) == written
            needle = data.draw(needles(list(written.values())))
            await finds_what_memory_finds(storage, collection, records, needle)
