"""The blob store port over every adapter (file system, PostgreSQL, memory): blobs read back
as written, whole (``get``), in pieces of at most 1 MiB (``chunks``) and as a local file
(``local``); storing a key again replaces it whole, and a reader never gets a mix of two
versions; ``stored`` lists exactly the blobs stored before a moment (by the store's clock, at
``put`` or ``adopt``), and ``discard_incoming`` removes only uploads left in the incoming area
for as long. The stores that keep blobs outside memory take in and give out a 64 MiB blob with
the process's peak memory growing by a fraction of it. (The sweep over every store, through
the service: ``tests/contract/http/test_blob_sweep.py``.)"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import hashlib
import os
import tempfile
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from psycopg import sql

from fourcorner.adapters.blobs import FileBlobStore, InMemoryBlobStore
from fourcorner.adapters.blobs.spool import CHUNK
from fourcorner.adapters.memory.storage import InMemoryStorage
from fourcorner.adapters.postgres import PostgresStorage
from fourcorner.adapters.postgres.blobs import PostgresBlobStore

T0 = datetime(2026, 1, 2, 10, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)
MiB = 1024 * 1024
KINDS = ["filesystem", pytest.param("postgres", marks=pytest.mark.postgres), "memory"]
MISSING = (FileNotFoundError, KeyError)


class Clock:
    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture(scope="session")
def blob_schema(postgres_url_and_schema: tuple[str, str]) -> tuple[str, str]:
    """The run's PostgreSQL schema, migrated (the blob tables are the storage's migration's)."""
    url, schema = postgres_url_and_schema
    # in a thread of its own: the fixture may be asked for from inside a running event loop
    with concurrent.futures.ThreadPoolExecutor(1) as thread:
        thread.submit(asyncio.run, PostgresStorage(url, schema=schema).migrate()).result()
    return url, schema


@contextlib.asynccontextmanager
async def opened(
    kind: str, folder: Path, clock: Clock, postgres: tuple[str, str] | None
) -> AsyncIterator[Any]:
    """An empty store of ``kind`` keeping its files (if any) in ``folder``."""
    if kind == "filesystem":
        yield FileBlobStore(folder / "blobs", clock=clock)
    elif kind == "memory":
        yield InMemoryBlobStore(clock=clock)
    else:
        assert postgres is not None
        url, schema = postgres
        async with await psycopg.AsyncConnection.connect(
            url, autocommit=True, options=f"-c search_path={schema}"
        ) as conn:
            await conn.execute("DELETE FROM blobs")
        store = PostgresBlobStore(url, schema=schema, spool=folder / "spool", clock=clock)
        await store.open()
        try:
            yield store
        finally:
            await store.close()


def postgres_of(kind: str, request: pytest.FixtureRequest) -> tuple[str, str] | None:
    return request.getfixturevalue("blob_schema") if kind == "postgres" else None


@pytest.fixture(params=KINDS)
def kind(request: Any) -> str:
    return str(request.param)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def store(
    kind: str, tmp_path: Path, clock: Clock, request: pytest.FixtureRequest
) -> AsyncIterator[Any]:
    async with opened(kind, tmp_path, clock, postgres_of(kind, request)) as subject:
        yield subject


async def listed(store: Any, before: datetime) -> set[str]:
    return {key async for key in store.stored(before)}


async def pieces(store: Any, key: str) -> list[bytes]:
    return [bytes(piece) async for piece in store.chunks(key)]


def age(path: Path, moment: datetime) -> None:
    os.utime(path, (moment.timestamp(), moment.timestamp()))


async def test_put_get_delete(store: Any) -> None:
    assert await store.put("ab12-x", b"one") == 3
    assert await store.get("ab12-x") == b"one"
    assert await pieces(store, "ab12-x") == [b"one"]
    await store.delete("ab12-x")
    await store.delete("ab12-x")  # deleting what is gone is fine
    with pytest.raises(MISSING):
        await store.get("ab12-x")


async def test_delete_all_removes_those_keys_only(store: Any) -> None:
    big = os.urandom(CHUNK + 10)  # more than one piece
    await store.put_all([("aa-1", b"one"), ("aa-2", b"two"), ("aa-3", b"three")])
    await store.put("aa-big", big)
    await store.delete_all(["aa-1", "aa-big", "aa-gone", "aa-1"])  # gone or twice: fine
    await store.delete_all([])
    for key in ("aa-1", "aa-big"):
        with pytest.raises(MISSING):
            await store.get(key)
    assert [await store.get(k) for k in ("aa-2", "aa-3")] == [b"two", b"three"]


async def test_a_missing_blob_is_missing_however_it_is_read(store: Any) -> None:
    with pytest.raises(MISSING):
        await store.get("ff-none")
    with pytest.raises(MISSING):
        await pieces(store, "ff-none")
    with pytest.raises(MISSING):
        async with store.local("ff-none"):
            pass


@pytest.mark.parametrize(
    "size", [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK + 17], ids=lambda n: f"{n}B"
)
async def test_pieces_are_at_most_a_chunk_and_make_the_blob(store: Any, size: int) -> None:
    data = os.urandom(size)
    assert await store.put("ab-sized", data) == size
    got = await pieces(store, "ab-sized")
    assert b"".join(got) == data and all(0 < len(p) <= CHUNK for p in got)
    assert len(got) == -(-size // CHUNK)  # no empty or short piece but the last
    assert await store.get("ab-sized") == data
    async with store.local("ab-sized") as path:
        assert path.read_bytes() == data
    if store.path("ab-sized") is None:  # a copy made for the block: gone after it
        assert not path.exists()
    incoming = store.incoming()
    incoming.write_bytes(data)
    assert await store.adopt("cd-adopted", incoming) == size
    assert await store.get("cd-adopted") == data
    assert not incoming.exists()


async def chunks_of_versions(store: Any, key: str) -> tuple[int, int]:
    """The rows of ``blob_chunks`` for ``key``: of the version its row of ``blobs`` names, and
    of any other."""
    async with await psycopg.AsyncConnection.connect(
        store._url, options=f"-c search_path={store._schema}"
    ) as conn:
        cursor = await conn.execute(
            "SELECT count(*) FILTER (WHERE c.version = b.version), "
            "count(*) FILTER (WHERE c.version <> b.version) "
            "FROM blob_chunks c JOIN blobs b USING (key) WHERE key = %s",
            (key,),
        )
        row = await cursor.fetchone()
        assert row is not None
        return int(row[0]), int(row[1])


def chunk_count(data: bytes) -> int:
    return -(-len(data) // CHUNK)


SIZES = {"one-piece": 1000, "pieces": 2 * CHUNK + 5}  # stored by _PIECE(S), or by _write


@pytest.mark.parametrize("then", SIZES)
@pytest.mark.parametrize("first", SIZES)
async def test_storing_a_key_again_replaces_it_whole(
    store: Any, kind: str, first: str, then: str
) -> None:
    """Whichever way each version is written (one statement for a blob of one piece, alone
    or with others; a transaction of a statement per piece for more), the new one is read
    back, and the database holds its chunks and no others (migration 0021's trigger)."""
    old, new = os.urandom(SIZES[first]), os.urandom(SIZES[then] + 1)
    await store.put("ab-again", old)
    await store.put("ab-again", new)
    assert b"".join(await pieces(store, "ab-again")) == new
    if kind == "postgres":
        assert await chunks_of_versions(store, "ab-again") == (chunk_count(new), 0)
    await store.put_all([("ab-again", old), ("ab-beside", b"x")])
    assert b"".join(await pieces(store, "ab-again")) == old
    if kind == "postgres":
        assert await chunks_of_versions(store, "ab-again") == (chunk_count(old), 0)


async def test_writers_of_one_key_at_once_leave_one_of_their_blobs_whole(
    store: Any, kind: str
) -> None:
    """Round after round, writers of one key at once, with blobs of one piece and of several
    (written two ways): one of their blobs is left, whole, and in the database only its
    chunks, however the writers' transactions interleaved (the first round: the key is
    new)."""
    for _ in range(6):
        versions = [os.urandom(2 * CHUNK + n if n % 2 else 1000 + n) for n in range(6)]
        await asyncio.gather(*(store.put("ab-raced", data) for data in versions))
        got = await store.get("ab-raced")
        assert got in versions
        if kind == "postgres":
            assert await chunks_of_versions(store, "ab-raced") == (chunk_count(got), 0)


async def test_writers_of_one_small_key_at_once_leave_one_piece(store: Any, kind: str) -> None:
    """A blob of one piece takes the one-statement path: the same guarantee, round after
    round."""
    for _ in range(10):
        versions = [os.urandom(1000 + n) for n in range(8)]
        await asyncio.gather(*(store.put("ab-small", data) for data in versions))
        assert await store.get("ab-small") in versions
        if kind == "postgres":
            assert await chunks_of_versions(store, "ab-small") == (1, 0)


async def test_put_all_stores_bytes_and_uploads_as_put_and_adopt_would(
    store: Any, clock: Clock
) -> None:
    """One call for a transaction's blobs: small and large, bytes and uploads, each read back
    whole, sized in the order given, the uploads adopted (gone from the incoming area), all
    stored at the store's clock."""
    small, large = store.incoming(), store.incoming()
    small.write_bytes(b"<sbd/>")
    large_data = os.urandom(2 * CHUNK + 3)
    large.write_bytes(large_data)
    wanted = {
        "ab-svrl": b"<svrl/>",
        "ab-doc": b"<sbd/>",
        "ab-large": large_data,
        "ab-bytes": os.urandom(CHUNK + 1),
        "ab-empty": b"",
    }
    clock.now = T0 - HOUR
    sizes = await store.put_all(
        [
            ("ab-svrl", wanted["ab-svrl"]),
            ("ab-doc", small),
            ("ab-large", large),
            ("ab-bytes", wanted["ab-bytes"]),
            ("ab-empty", b""),
        ]
    )
    assert sizes == [7, 6, 2 * CHUNK + 3, CHUNK + 1, 0]
    for key, data in wanted.items():
        assert await store.get(key) == data
    assert not small.exists() and not large.exists()
    assert await listed(store, T0) == set(wanted)
    assert await listed(store, T0 - 2 * HOUR) == set()
    assert await store.put_all([]) == []


@contextlib.asynccontextmanager
async def storage_of(kind: str, postgres: tuple[str, str] | None) -> AsyncIterator[Any]:
    """The storage whose units of work go with a store of ``kind``: the store's database for
    the database store, else one in memory."""
    if postgres is None:
        yield InMemoryStorage()
        return
    url, schema = postgres
    storage = PostgresStorage(url, schema=schema)
    await storage.open()
    try:
        yield storage
    finally:
        await storage.close()


async def test_put_all_in_a_unit_of_work_stores_with_its_commit_where_the_store_can(
    store: Any, kind: str, request: pytest.FixtureRequest
) -> None:
    """The database store writes the one-piece blobs in a unit of work of its own database:
    stored by its commit, never by its rollback; a larger blob, and any blob of the other
    stores, is stored at once. Sizes as ``put_all``'s, uploads adopted either way."""
    small, large = b"<sbd/>", os.urandom(CHUNK + 1)
    async with storage_of(kind, postgres_of(kind, request)) as storage:
        upload = store.incoming()
        upload.write_bytes(b"<svrl/>")
        async with storage.unit_of_work() as uow:
            sizes = await store.put_all_in(
                uow, [("ab-small", small), ("ab-large", large), ("ab-upload", upload)]
            )
            assert sizes == [6, CHUNK + 1, 7] and not upload.exists()
            assert await store.get("ab-large") == large
            if kind == "postgres":
                with pytest.raises(MISSING):  # not yet: with the commit
                    await store.get("ab-small")
            await uow.rollback()
        if kind == "postgres":
            assert await listed(store, T0 + HOUR) == {"ab-large"}
        async with storage.unit_of_work() as uow:
            assert await store.put_all_in(uow, [("ab-small", small), ("ab-one", b"1")]) == [6, 1]
            await uow.commit()
        assert await store.get("ab-small") == small and await store.get("ab-one") == b"1"
        async with storage.unit_of_work() as uow:  # one blob alone, stored again
            assert await store.put_all_in(uow, [("ab-one", b"22")]) == [2]
            await uow.commit()
        assert await pieces(store, "ab-one") == [b"22"]
        if kind == "postgres":
            assert await chunks_of_versions(store, "ab-one") == (1, 0)


async def test_put_all_given_a_key_twice_stores_the_last(store: Any, kind: str) -> None:
    """As two puts in turn would: the second bytes, with the other keys of the call."""
    sizes = await store.put_all([("ab-twice", b"first"), ("ab-other", b"x"), ("ab-twice", b"2")])
    assert sizes == [5, 1, 1]
    assert (await store.get("ab-twice"), await store.get("ab-other")) == (b"2", b"x")
    if kind == "postgres":
        assert await chunks_of_versions(store, "ab-twice") == (1, 0)


@pytest.mark.parametrize("big_first", [True, False], ids=["big-then-small", "small-then-big"])
async def test_put_all_given_a_key_twice_stores_the_last_whatever_their_sizes(
    store: Any, kind: str, tmp_path: Path, big_first: bool
) -> None:
    """A blob of more than one piece and a small one under the same key: the last one given
    is stored (the store writes small and large blobs on separate paths)."""
    big, small = os.urandom(2 * CHUNK + 5), b"small"
    adopted = tmp_path / "big"
    adopted.write_bytes(big)
    given = [("ab-twice", adopted), ("ab-twice", small)]
    if not big_first:
        given.reverse()
    sizes = await store.put_all(given)
    assert sizes == ([len(big), len(small)] if big_first else [len(small), len(big)])
    assert await store.get("ab-twice") == (small if big_first else big)
    assert not adopted.exists()


async def test_put_all_writers_of_the_same_keys_at_once_leave_each_blob_whole(
    store: Any, kind: str
) -> None:
    """Writers naming the same small keys in opposite orders neither deadlock nor leave a
    key with two versions' pieces."""
    keys = ["ab-first", "ab-second", "ab-third"]
    versions = [{key: os.urandom(500 + n) for key in keys} for n in range(8)]
    await asyncio.gather(
        *(
            store.put_all([(key, v[key]) for key in (keys if n % 2 else keys[::-1])])
            for n, v in enumerate(versions)
        )
    )
    for key in keys:
        assert await store.get(key) in [v[key] for v in versions]
    if kind == "postgres":
        async with await psycopg.AsyncConnection.connect(
            store._url, options=f"-c search_path={store._schema}"
        ) as conn:
            cursor = await conn.execute(
                "SELECT key, count(*) FROM blob_chunks GROUP BY key ORDER BY key"
            )
            assert await cursor.fetchall() == [(key, 1) for key in sorted(keys)]


async def test_a_reader_never_gets_a_mix_of_two_versions(store: Any) -> None:
    old, new = os.urandom(3 * CHUNK), os.urandom(3 * CHUNK)
    await store.put("ab-read", old)
    reading = store.chunks("ab-read")
    got = [await anext(reading)]
    await store.put("ab-read", new)
    try:
        got += [piece async for piece in reading]
    except MISSING:
        return  # told the blob changed under it
    assert b"".join(got) == old


async def test_stored_lists_blobs_by_when_they_were_stored(store: Any, clock: Clock) -> None:
    clock.now = T0 - 2 * HOUR
    await store.put("aa-old", b"1")
    incoming = store.incoming()
    incoming.write_bytes(b"adopted")
    age(incoming, T0 - 3 * HOUR)  # an upload streamed long ago is stored when adopted
    clock.now = T0 - 10 * timedelta(minutes=1)
    await store.adopt("bb-adopted", incoming)
    await store.put("cc-young", b"2")
    assert await listed(store, T0 - HOUR) == {"aa-old"}
    assert await listed(store, T0) == {"aa-old", "bb-adopted", "cc-young"}
    assert await listed(store, T0 - 3 * HOUR) == set()
    clock.now = T0
    await store.put("aa-old", b"stored again")  # storing a key again makes it young
    await store.delete("cc-young")
    assert await listed(store, T0) == {"bb-adopted"}


async def test_only_old_uploads_left_in_the_incoming_area_are_discarded(store: Any) -> None:
    old, young = store.incoming(), store.incoming()
    old.write_bytes(b"left by a crash")
    young.write_bytes(b"still being written")
    age(old, T0 - 2 * HOUR)
    age(young, T0 - 10 * timedelta(minutes=1))
    assert await store.discard_incoming(T0 - HOUR) == 1
    assert not old.exists() and young.exists()
    assert await store.adopt("dd-upload", young) == len(b"still being written")
    assert await store.discard_incoming(T0) == 0
    assert await listed(store, T0 + HOUR) == {"dd-upload"}


def test_the_file_store_lists_only_its_blobs(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path, clock=Clock())

    async def run() -> set[str]:
        await store.put("ee-blob", b"x")
        (tmp_path / "ee" / "not a key").write_bytes(b"y")
        (tmp_path / "stray.txt").write_bytes(b"z")
        (tmp_path / "ee" / "nested").mkdir()
        store.incoming().write_bytes(b"an upload")
        return await listed(store, T0 + HOUR)

    assert asyncio.run(run()) == {"ee-blob"}


@pytest.mark.postgres
async def test_the_database_store_reads_and_sweeps_the_files_kept_before_it(
    tmp_path: Path, blob_schema: tuple[str, str]
) -> None:
    """Switched from files to the database: the blobs kept as files are still read, listed
    and removed; new blobs go to the database only."""
    clock = Clock(T0 - 2 * HOUR)
    files = FileBlobStore(tmp_path / "blobs", clock=clock)
    await files.put("aa-before", b"kept as a file")
    async with opened("postgres", tmp_path, clock, blob_schema) as plain:
        store = PostgresBlobStore(
            plain._url, schema=plain._schema, spool=tmp_path / "spool", files=files, clock=clock
        )
        await store.open()
        try:
            clock.now = T0
            await store.put("bb-after", b"in the database")
            assert await store.get("aa-before") == b"kept as a file"
            async with store.local("aa-before") as path:
                assert path.read_bytes() == b"kept as a file"
            assert await listed(store, T0 - HOUR) == {"aa-before"}
            assert await listed(store, T0 + HOUR) == {"aa-before", "bb-after"}
            assert await listed(files, T0 + HOUR) == {"aa-before"}  # nothing new as a file
            await store.delete("aa-before")
            with pytest.raises(MISSING):
                await store.get("aa-before")
        finally:
            await store.close()


@pytest.mark.postgres
async def test_a_replaced_row_drops_its_chunks_whatever_the_writers_search_path(
    tmp_path: Path, blob_schema: tuple[str, str]
) -> None:
    """Migration 0021's trigger deletes from the ``blob_chunks`` of its own schema, also for
    a writer whose ``search_path`` names no schema of blobs."""
    url, schema = blob_schema
    async with opened("postgres", tmp_path, Clock(), blob_schema) as store:
        await store.put("ab-elsewhere", os.urandom(CHUNK + 1))
        async with await psycopg.AsyncConnection.connect(
            url, autocommit=True, options="-c search_path=pg_catalog"
        ) as conn:
            await conn.execute(
                sql.SQL("UPDATE {}.blobs SET version = %s, size = 0 WHERE key = %s").format(
                    sql.Identifier(schema)
                ),
                (uuid.uuid4(), "ab-elsewhere"),
            )
        assert await chunks_of_versions(store, "ab-elsewhere") == (0, 0)
        assert await store.get("ab-elsewhere") == b""


ages = st.dictionaries(
    st.from_regex(r"[0-9a-f]{2}[0-9a-z-]{1,20}", fullmatch=True),
    st.integers(-300, 300),  # minutes before T0 (negative: after)
    max_size=12,
)


@pytest.mark.parametrize("backend", KINDS)
@settings(max_examples=40, deadline=None)
@given(ages=ages, grace=st.integers(0, 240))
def test_stored_is_exactly_the_blobs_older_than_the_moment(
    backend: str, request: pytest.FixtureRequest, ages: dict[str, int], grace: int
) -> None:
    postgres = postgres_of(backend, request)
    with tempfile.TemporaryDirectory(prefix="fourcorner-blobs-test-") as folder:
        clock = Clock()

        async def run() -> set[str]:
            async with opened(backend, Path(folder), clock, postgres) as store:
                for key, minutes in ages.items():
                    clock.now = T0 - timedelta(minutes=minutes)
                    await store.put(key, key.encode())
                return await listed(store, T0 - timedelta(minutes=grace))

        assert asyncio.run(run()) == {k for k, m in ages.items() if m > grace}


# --- memory ----------------------------------------------------------------------------------


def status_bytes(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} in /proc/self/status")


class Peak:
    """How much this process's peak resident memory grows over a stretch of work."""

    def __enter__(self) -> Peak:
        Path("/proc/self/clear_refs").write_text("5")  # the peak restarts from now
        self.base = status_bytes("VmRSS")
        return self

    def __exit__(self, *_: object) -> None:
        self.grew = status_bytes("VmHWM") - self.base


@pytest.mark.parametrize(
    "kind", ["filesystem", pytest.param("postgres", marks=pytest.mark.postgres)]
)
async def test_a_large_blob_goes_in_and_out_in_bounded_memory(store: Any) -> None:
    size = 64 * MiB
    incoming = store.incoming()
    written = hashlib.sha256()
    with incoming.open("wb") as file:
        for n in range(size // MiB):
            piece = hashlib.sha512(n.to_bytes(4, "big")).digest() * (MiB // 64)
            written.update(piece)
            file.write(piece)
    del piece
    with Peak() as taking_in:
        assert await store.adopt("ab-large", incoming) == size
    read = hashlib.sha256()
    with Peak() as streaming:
        async for chunk in store.chunks("ab-large"):
            read.update(chunk)
    copied = hashlib.sha256()
    with Peak() as copying:
        async with store.local("ab-large") as path:
            with path.open("rb") as file:
                while chunk := file.read(MiB):
                    copied.update(chunk)
    assert read.digest() == copied.digest() == written.digest()
    for what, peak in (("adopt", taking_in), ("chunks", streaming), ("local", copying)):
        assert peak.grew <= 16 * MiB, f"{what}: peak RSS grew {peak.grew / MiB:.1f} MiB"
