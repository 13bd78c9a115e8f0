"""Upgrading a database to migration 0018: free-text search covers an organisation's events
(type, id, the transaction and participants of the payload), a transaction's artefacts (type,
content type, id) and a member's email. Rows stored before it (events and artefacts with no
search text, members with the text of their names and user id) get the text the code writes
(``Collection.search_text``), and a search finds them, within their own organisation only."""

from __future__ import annotations

import itertools
import pathlib
import sqlite3
import string
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import sql

from fourcorner.application.collections import ARTEFACTS, EVENTS, MEMBERS
from fourcorner.application.listing import equals
from fourcorner.application.storage import Collection, Query
from fourcorner.domain.events import EVENT_NAMES, MLS_RECEIVED, TRANSACTION_RECEIVED, WEBHOOK_TEST
from fourcorner.domain.member import Member, MemberStatus
from fourcorner.domain.organisation import UserRef
from fourcorner.domain.roles import Role
from fourcorner.domain.transaction import Artefact, ArtefactType
from fourcorner.domain.webhook import DeliveryStatus, Event
from upgrade import Rows, artefact_row, event_row, member_row, postgres_upgraded, sqlite_upgraded

UPGRADE = 18  # the migration under test
NOW = datetime(2026, 3, 1, tzinfo=UTC)
ORG_A, ORG_B = uuid.UUID(int=101), uuid.UUID(int=102)
TX_A, TX_B = uuid.UUID(int=201), uuid.UUID(int=202)

Opened = Callable[..., AbstractAsyncContextManager[tuple[Any, Callable[[str], Any]]]]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def upgrades(request: Any, tmp_path: pathlib.Path) -> Opened:
    """``upgrades(rows, upgrade=UPGRADE)``: a fresh database of each SQL adapter with ``rows``
    written before migration ``upgrade``, upgraded; yields the storage and ``texts(table)``,
    the stored search text by id."""
    numbers = itertools.count()
    if request.param == "sqlite":

        @asynccontextmanager
        async def sqlite(
            rows: Rows, upgrade: int = UPGRADE
        ) -> AsyncIterator[tuple[Any, Callable[[str], Any]]]:
            path = tmp_path / f"db{next(numbers)}.sqlite"
            async with sqlite_upgraded(path, upgrade, rows) as storage:

                async def texts(table: str) -> dict[str, str]:
                    conn = sqlite3.connect(path)
                    try:
                        select = f'SELECT "id", "search_text" FROM "{table}"'  # noqa: S608
                        return dict(conn.execute(select))
                    finally:
                        conn.close()

                yield storage, texts

        return sqlite
    url, run_schema = request.getfixturevalue("postgres_url_and_schema")

    @asynccontextmanager
    async def postgres(
        rows: Rows, upgrade: int = UPGRADE
    ) -> AsyncIterator[tuple[Any, Callable[[str], Any]]]:
        schema = f"{run_schema}_{upgrade}_{next(numbers)}"
        async with postgres_upgraded(url, schema, upgrade, rows) as storage:

            async def texts(table: str) -> dict[str, str]:
                options = f"-c search_path={schema}"
                async with await psycopg.AsyncConnection.connect(url, options=options) as conn:
                    select = sql.SQL('SELECT "id"::text, "search_text" FROM {}')
                    cursor = await conn.execute(select.format(sql.Identifier(table)))
                    return dict(await cursor.fetchall())

            yield storage, texts

    return postgres


def event(n: int, org: uuid.UUID, kind: str, payload: dict[str, Any]) -> Event:
    return Event(
        id=uuid.UUID(int=1000 + n),
        org_id=org,
        event_type=kind,
        payload=payload,
        created_at=NOW + timedelta(seconds=n),
        status=DeliveryStatus.DELIVERED,
    )


def artefact(n: int, org: uuid.UUID, tx: uuid.UUID, kind: ArtefactType, media: str) -> Artefact:
    return Artefact(
        uuid.UUID(int=2000 + n), tx, org, kind, media, 10, f"blob-{n}", NOW + timedelta(seconds=n)
    )


def member(n: int, org: uuid.UUID, email: str, **changes: Any) -> Member:
    fields: dict[str, Any] = {
        "id": uuid.UUID(int=3000 + n),
        "org_id": org,
        "user_ref": f"user-{n}",
        "role": Role.ORGMEMBER,
        "status": MemberStatus.ACTIVE,
        "created_at": NOW + timedelta(seconds=n),
        "created_by": UserRef("user-0"),
        "last_modified_at": NOW,
        "email": email,
        **changes,
    }
    return Member(**fields)


def before_0018(m: Member) -> str:
    """A member's search text as the code before 0018 wrote it: names and user id."""
    return "\x1f".join((m.first_name, m.last_name, m.user_ref)).lower()


def old_rows(events: Sequence[Event], artefacts: Sequence[Artefact], members: Sequence[Member]):
    """The rows as the code before 0018 wrote them (events and artefacts had no search)."""
    return [
        *(event_row(e) for e in events),
        *(artefact_row(a) for a in artefacts),
        *(member_row(m, search_text=before_0018(m)) for m in members),
    ]


async def search(storage: Any, collection: Collection[Any], org: uuid.UUID, text: str) -> set[str]:
    query = Query(where=(equals(collection, "orgId", org),), search=text, limit=500)
    async with storage.unit_of_work() as uow:
        page = await uow.repository(collection).list(query)
    return {str(item.id) for item in page.items}


SENDER, RECEIVER = "iso6523-actorid-upis::0088:5798000000001", "0007:ABCDEF"
EVENTS_STORED = [
    event(1, ORG_A, TRANSACTION_RECEIVED, {"id": str(TX_A), "senderId": SENDER, "valid": True}),
    event(2, ORG_A, MLS_RECEIVED, {"transactionId": str(TX_A), "mlsResponseCode": "AP"}),
    event(3, ORG_B, WEBHOOK_TEST, {"message": "a test"}),
    event(4, ORG_B, "transaction.sent", {"id": str(TX_B), "receiverId": RECEIVER}),
]
ARTEFACTS_STORED = [
    artefact(1, ORG_A, TX_A, ArtefactType.BUSINESS_DOCUMENT, "application/xml"),
    artefact(2, ORG_A, TX_A, ArtefactType.VALIDATION_RESULT, "application/json"),
    artefact(3, ORG_B, TX_B, ArtefactType.MLS, "application/xml"),
]
MEMBERS_STORED = [
    member(1, ORG_A, "Asa.Berg@Example.COM", first_name="Åsa", last_name="Berg"),
    member(2, ORG_B, "bo@b.example", first_name="Bo"),
    member(3, ORG_A, "dan@invited.example", user_ref="", status=MemberStatus.INVITED),
    member(4, ORG_A, ""),  # an address nobody gave
]


async def test_stored_rows_get_the_text_the_code_writes_and_are_found(upgrades: Opened) -> None:
    rows = old_rows(EVENTS_STORED, ARTEFACTS_STORED, MEMBERS_STORED)
    async with upgrades(rows) as (storage, texts):
        for collection, records in (
            (EVENTS, EVENTS_STORED),
            (ARTEFACTS, ARTEFACTS_STORED),
            (MEMBERS, MEMBERS_STORED),
        ):
            stored = await texts(collection.name)
            assert stored == {str(r.id): collection.search_text(r) for r in records}
        e1, e2, e3, e4 = (str(e.id) for e in EVENTS_STORED)
        assert await search(storage, EVENTS, ORG_A, "TRANSACTION.") == {e1}
        assert await search(storage, EVENTS, ORG_A, str(TX_A).upper()) == {e1, e2}
        assert await search(storage, EVENTS, ORG_A, "0088:579800") == {e1}
        assert await search(storage, EVENTS, ORG_A, e2[-12:]) == {e2}
        assert await search(storage, EVENTS, ORG_B, "abcdef") == {e4}
        assert await search(storage, EVENTS, ORG_B, "webhook") == {e3}
        # another organisation's values find nothing
        assert await search(storage, EVENTS, ORG_B, str(TX_A)) == set()
        assert await search(storage, EVENTS, ORG_A, "0007:abc") == set()
        a1, a2, a3 = (str(a.id) for a in ARTEFACTS_STORED)
        assert await search(storage, ARTEFACTS, ORG_A, "business") == {a1}
        assert await search(storage, ARTEFACTS, ORG_A, "json") == {a2}
        assert await search(storage, ARTEFACTS, ORG_A, "xml") == {a1}
        assert await search(storage, ARTEFACTS, ORG_B, "XML") == {a3}
        assert await search(storage, ARTEFACTS, ORG_A, "mls") == set()
        m1, m2, m3, _ = (str(m.id) for m in MEMBERS_STORED)
        assert await search(storage, MEMBERS, ORG_A, "asa.berg@example.com") == {m1}
        assert await search(storage, MEMBERS, ORG_A, "ÅSA") == {m1}  # the names still
        assert await search(storage, MEMBERS, ORG_A, "@invited") == {m3}
        assert await search(storage, MEMBERS, ORG_A, "b.example") == set()
        assert await search(storage, MEMBERS, ORG_B, "b.example") == {m2}


PROPERTY = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
# what the service writes in these fields: ids, participant identifiers, event names, media
# types and addresses; capitals in ASCII (the migration lowers those as Python does)
IDENTIFIER = st.text(string.ascii_letters + string.digits + ":.-_@~", max_size=12)
EMAILS = st.builds(
    lambda local, domain: f"{local}@{domain}" if local else "",
    st.text(string.ascii_letters + string.digits + "._+-éø", max_size=8),
    st.text(string.ascii_letters + ".-", min_size=1, max_size=8),
)
PAYLOAD_VALUES = IDENTIFIER | st.integers(-1000, 1000) | st.booleans() | st.none()
PAYLOADS = st.dictionaries(
    st.sampled_from(["transactionId", "id", "senderId", "receiverId", "message", "valid"]),
    PAYLOAD_VALUES | st.lists(PAYLOAD_VALUES, max_size=2),
    max_size=5,
)
ORGS = st.sampled_from([ORG_A, ORG_B])


@st.composite
def stores(draw: st.DrawFn) -> tuple[list[Event], list[Artefact], list[Member]]:
    n = draw(st.integers(1, 6))
    events = [
        event(i, draw(ORGS), draw(st.sampled_from(EVENT_NAMES)), draw(PAYLOADS)) for i in range(n)
    ]
    artefacts = [
        artefact(
            i,
            draw(ORGS),
            draw(st.sampled_from([TX_A, TX_B])),
            draw(st.sampled_from(list(ArtefactType))),
            draw(st.sampled_from(["application/xml", "application/json", "application/soap+xml"])),
        )
        for i in range(n)
    ]
    # names of any text: the code before 0018 lowered them, and the migration keeps them
    names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=6)
    members = [
        member(i, draw(ORGS), draw(EMAILS), first_name=draw(names), last_name=draw(names))
        for i in range(n)
    ]
    return events, artefacts, members


def needles(texts: list[str]) -> st.SearchStrategy[str]:
    """A piece of a record's text in another case, or an unrelated text."""
    piece = st.sampled_from(texts).flatmap(
        lambda t: st.tuples(st.integers(0, max(0, len(t) - 1)), st.integers(1, 6)).map(
            lambda p: t[p[0] : p[0] + p[1]]
        )
    )
    recased = piece.flatmap(lambda t: st.sampled_from((t, t.upper(), t.swapcase())))
    return recased.filter(lambda t: t.strip() and "\x1f" not in t) | IDENTIFIER.filter(str.strip)


async def finds_what_memory_finds(
    storage: Any, collection: Collection[Any], records: Sequence[Any], needle: str
) -> None:
    """A search for ``needle`` in each organisation finds exactly its ``records`` whose text
    holds it (lower-cased), as the memory adapter does."""
    for org in (ORG_A, ORG_B):
        expected = {
            str(r.id)
            for r in records
            if r.org_id == org and needle.lower() in collection.search_text(r)
        }
        assert await search(storage, collection, org, needle) == expected, needle


@PROPERTY
@given(stored=stores(), data=st.data())
async def test_any_stored_rows_get_the_text_the_code_writes(
    upgrades: Opened, stored: tuple[list[Event], list[Artefact], list[Member]], data: Any
) -> None:
    """For any events, artefacts and members stored before 0018, each row's text is what
    ``Collection.search_text`` writes, and a search in an organisation finds exactly its
    records whose text holds the needle (lower-cased), as the memory adapter does."""
    events, artefacts, members = stored
    async with upgrades(old_rows(events, artefacts, members)) as (storage, texts):
        for collection, records in ((EVENTS, events), (ARTEFACTS, artefacts), (MEMBERS, members)):
            assert await texts(collection.name) == {
                str(r.id): collection.search_text(r) for r in records
            }
            needle = data.draw(needles([collection.search_text(r) for r in records]))
            await finds_what_memory_finds(storage, collection, records, needle)
