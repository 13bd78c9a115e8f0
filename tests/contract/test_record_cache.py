"""``Storage.reader()``: units of work that only read, answered from the SQL adapters' record
cache. Each must see every commit that finished before it began (another process's on
PostgreSQL within the notification's delay), never an uncommitted write, and refuse to write.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import struct
import sys
import uuid
from typing import TYPE_CHECKING, Any

import attrs
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import records
from fourcorner.adapters.sqlite import SqliteStorage
from fourcorner.application.collections import DELIVERIES, ORGANISATIONS, USERS
from fourcorner.application.storage import Query
from fourcorner.domain.user import User

if TYPE_CHECKING:  # fixtures' types; conftest modules are not imported by name
    from conftest import OpenStorage, StorageUnderTest

SQL_ADAPTERS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def user(name: str = "Ann", ident: str = "u-1") -> User:
    return records.user(ident, name)


async def save(subject: StorageUnderTest, item: User) -> None:
    """Add the user, or replace the stored one."""
    async with subject.unit_of_work() as uow:
        users = uow.repository(USERS)
        await (users.add(item) if await users.get(item.id) is None else users.update(item))
        await uow.commit()


async def name_seen(subject: StorageUnderTest, ident: str = "u-1") -> str | None:
    async with subject.storage.reader() as reader:
        found = await reader.repository(USERS).get(ident)
        again = await reader.repository(USERS).first(email=f"{ident}@example.com")
        assert found == again
    return None if found is None else found.name


async def test_a_reader_sees_every_commit_of_its_own_process(store: StorageUnderTest) -> None:
    assert await name_seen(store) is None
    await save(store, user("Ann"))
    assert await name_seen(store) == "Ann"
    assert await name_seen(store) == "Ann"  # a hit, on the SQL adapters
    await save(store, user("Bea"))
    assert await name_seen(store) == "Bea"
    async with store.unit_of_work() as uow:
        await uow.repository(USERS).remove("u-1")
        await uow.commit()
    assert await name_seen(store) is None


async def test_a_rolled_back_write_is_never_seen(store: StorageUnderTest) -> None:
    await save(store, user("Ann"))
    assert await name_seen(store) == "Ann"
    async with store.unit_of_work() as uow:
        await uow.repository(USERS).update(user("Bea"))
        await uow.rollback()
    assert await name_seen(store) == "Ann"


async def test_a_reader_does_not_see_an_uncommitted_write(store: StorageUnderTest) -> None:
    """Read while another unit of work holds an uncommitted change (SQLite: the reader waits
    for it to end), so nothing uncommitted can enter the cache."""
    await save(store, user("Ann"))
    async with store.unit_of_work() as uow:
        await uow.repository(USERS).update(user("Uncommitted"))
        reading = asyncio.create_task(name_seen(store))
        await asyncio.sleep(0.05)
        await uow.rollback()
    assert await reading == "Ann"
    assert await name_seen(store) == "Ann"


async def test_a_reader_refuses_to_write_or_lock(store: StorageUnderTest) -> None:
    await save(store, user("Ann"))
    async with store.storage.reader() as reader:
        users = reader.repository(USERS)
        for attempt in (
            lambda: users.add(user("X", "u-2")),
            lambda: users.update(user("X")),
            lambda: users.remove("u-1"),
            lambda: users.lock("u-1"),
            lambda: reader.repository(DELIVERIES).claim(Query(limit=1)),
        ):
            with pytest.raises(RuntimeError, match="reader"):
                await attempt()
        # and it still reads
        assert (await users.get("u-1")) == user("Ann")
        assert (await reader.repository(ORGANISATIONS).list(Query())).items == []
    assert await name_seen(store) == "Ann"


async def heard_of(subject: StorageUnderTest) -> None:
    """What tells this process of another's commit (a request read from a socket, a child's
    exit) comes through its event loop: on SQLite, one look at ``data_version`` serves the
    rest of the loop's pass in which it was taken (``SqliteStorage.notice_other_writers``),
    so a commit made by the same task in that pass, through another connection, is seen once
    the loop has gone round."""
    await asyncio.sleep(0)


async def seen_within(subject: StorageUnderTest, name: str | None, seconds: float) -> bool:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while loop.time() < deadline:
        if await name_seen(subject) == name:
            return True
        await asyncio.sleep(0.005)
    return False


async def listening(subject: StorageUnderTest) -> None:
    wait = getattr(subject.storage, "wait_listening", None)
    if wait is not None:
        async with asyncio.timeout(10):
            await wait()


@pytest.mark.parametrize("kind", SQL_ADAPTERS)
async def test_a_reader_sees_another_process_commits(open_storage: OpenStorage, kind: str) -> None:
    """Two adapters on one database stand for two processes: SQLite notices the other's
    commits by ``PRAGMA data_version`` at once; PostgreSQL by ``NOTIFY``, well inside the
    cache's 5 s expiry."""
    writer = await open_storage(kind)
    reader = await open_storage(kind)
    try:
        await listening(reader)
        await save(writer, user("Ann"))
        assert await seen_within(reader, "Ann", 2)
        assert await name_seen(reader) == "Ann"  # now cached in the reader's process
        for name in ("Bea", "Cid", "Dee"):
            await save(writer, user(name))
            if kind == "sqlite":
                await heard_of(reader)
                assert await name_seen(reader) == name
            else:
                assert await seen_within(reader, name, 1.0), f"{name} not seen within 1 s"
    finally:
        await writer.close()
        await reader.close()


async def test_sqlite_readers_see_a_change_made_outside_fourcorner(
    open_storage: OpenStorage,
) -> None:
    subject = await open_storage("sqlite")
    try:
        await save(subject, user("Ann"))
        assert await name_seen(subject) == "Ann"
        conn = subject._conn  # type: ignore[attr-defined]  # a connection of its own
        data = subject.storage.repositories.converter.dumps(user("Zed"))  # type: ignore[attr-defined]
        conn.execute("UPDATE users SET data = ?, name = 'Zed' WHERE id = 'u-1'", (data,))
        conn.commit()
        await heard_of(subject)
        assert await name_seen(subject) == "Zed"
    finally:
        await subject.close()


@pytest.mark.postgres
async def test_postgres_cache_is_suspended_while_its_listener_is_down(
    open_storage: OpenStorage, postgres_url_and_schema: tuple[str, str]
) -> None:
    """Cut the listener's connection: the cache stops answering at once (a change made
    meanwhile, with no notification, is seen), and works again when the listener is back."""
    url, schema = postgres_url_and_schema
    subject = await open_storage("postgres")
    storage: Any = subject.storage
    try:
        await listening(subject)
        await save(subject, user("Ann"))
        assert await name_seen(subject) == "Ann"
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as admin:
            await admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = %s",
                (f"fourcorner-listener:{schema}",),
            )
            for _ in range(500):
                if not storage.listening:
                    break
                await asyncio.sleep(0.01)
            assert not storage.listening
            # a change no notification announces: only an uncached read can see it
            data = storage.repositories.converter.dumps(user("Zed"))
            await admin.execute(
                f'UPDATE "{schema}".users SET data = %s WHERE id = %s',  # noqa: S608
                (data, "u-1"),
            )
            assert await name_seen(subject) == "Zed"
        await listening(subject)
        assert storage.listening
        assert await name_seen(subject) == "Zed"
        await save(subject, attrs.evolve(user("Max")))
        assert await name_seen(subject) == "Max"
    finally:
        await subject.close()


@pytest.mark.postgres
async def test_postgres_reader_takes_no_connection_when_everything_hits(
    open_storage: OpenStorage,
) -> None:
    subject = await open_storage("postgres")
    storage: Any = subject.storage
    try:
        await listening(subject)
        await save(subject, user("Ann"))
        assert await name_seen(subject) == "Ann"
        pool = storage._pool
        before = pool.get_stats().get("requests_num", 0)
        for _ in range(5):
            assert await name_seen(subject) == "Ann"
        assert pool.get_stats().get("requests_num", 0) == before
        missing = str(uuid.uuid4())
        assert await name_seen(subject, missing) is None
        assert pool.get_stats().get("requests_num", 0) == before + 1
    finally:
        await subject.close()


async def test_a_sqlite_reader_inside_a_unit_of_work_of_its_task_refuses_to_wait(
    open_storage: OpenStorage,
) -> None:
    """It would wait for the unit-of-work lock its own task holds: refused, not hung."""
    subject = await open_storage("sqlite")
    try:
        async with asyncio.timeout(5), subject.unit_of_work():
            with pytest.raises(RuntimeError, match="same task"):
                await name_seen(subject)
    finally:
        await subject.close()


# --- SQLite: another connection's commits (PRAGMA data_version) ---------------------------

# another process: set the user's name in the database file, commit, exit
_WRITER = """
import sqlite3, sys
path, name, data = sys.argv[1:]
conn = sqlite3.connect(path, timeout=5)
conn.execute("UPDATE users SET data = ?, name = ? WHERE id = 'u-1'", (data, name))
conn.commit()
conn.close()
"""


def _sqlite(subject: StorageUnderTest) -> SqliteStorage:
    assert isinstance(subject.storage, SqliteStorage)
    return subject.storage


def dumped(subject: StorageUnderTest, name: str) -> str:
    return str(_sqlite(subject).repositories.converter.dumps(user(name)))


def set_name(conn: sqlite3.Connection, subject: StorageUnderTest, name: str) -> None:
    """Through a connection of its own to the same file, as another program's would be."""
    data = dumped(subject, name)
    conn.execute("UPDATE users SET data = ?, name = ? WHERE id = 'u-1'", (data, name))
    conn.commit()


async def test_a_sqlite_reader_sees_a_commit_of_another_process_at_once(
    open_storage: OpenStorage,
) -> None:
    subject = await open_storage("sqlite")
    path = str(_sqlite(subject).path)
    try:
        await save(subject, user("Ann"))
        for name in ("Bea", "Cid", "Dee"):
            before = await name_seen(subject)
            assert before == await name_seen(subject)  # now a hit
            writer = await asyncio.create_subprocess_exec(
                sys.executable, "-c", _WRITER, path, name, dumped(subject, name)
            )
            assert await asyncio.wait_for(writer.wait(), 30) == 0
            assert await name_seen(subject) == name
    finally:
        await subject.close()


async def test_one_look_at_sqlites_data_version_serves_the_rest_of_the_loops_pass(
    open_storage: OpenStorage,
) -> None:
    """``PRAGMA data_version`` is asked once per pass of the event loop however many readers
    and read stamps the pass holds; a commit of another connection made after the look is
    seen in the next pass."""
    subject = await open_storage("sqlite")
    storage = _sqlite(subject)
    looks: list[str] = []
    storage.connection().set_trace_callback(
        lambda sql: looks.append(sql) if "data_version" in sql else None
    )
    conn = sqlite3.connect(storage.path, timeout=5)
    try:
        await save(subject, user("Ann"))
        await heard_of(subject)
        looks.clear()
        stamp = storage.read_stamp()
        assert await name_seen(subject) == "Ann"
        assert storage.read_stamp() == stamp
        assert len(looks) == 1
        set_name(conn, subject, "Bea")  # after the look, in the same pass: not looked for
        assert storage.read_stamp() == stamp and len(looks) == 1
        await heard_of(subject)
        assert storage.read_stamp() != stamp and len(looks) == 2
        assert await name_seen(subject) == "Bea"
    finally:
        conn.close()
        storage.connection().set_trace_callback(None)
        await subject.close()


# what may happen between two reads: a commit of another connection, one of the storage's
# own, a checkpoint that empties the log
_STEPS = st.lists(st.sampled_from(["outside", "own", "checkpoint", "read"]), max_size=12)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=_STEPS)
async def test_a_sqlite_reader_sees_every_finished_commit_whatever_came_between(
    open_storage: OpenStorage, steps: list[str]
) -> None:
    subject = await open_storage("sqlite")
    conn = sqlite3.connect(_sqlite(subject).path, timeout=5)
    try:
        await save(subject, user("n-0"))
        current = "n-0"
        for i, step in enumerate(steps, 1):
            if step == "outside":
                current = f"n-{i}"
                set_name(conn, subject, current)
            elif step == "own":
                current = f"n-{i}"
                await save(subject, user(current))
            elif step == "checkpoint":
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            await heard_of(subject)
            assert await name_seen(subject) == current, (i, steps)
    finally:
        conn.close()
        await subject.close()


# another process asks who holds byte 128 of the -shm file (SQLite's "DMS" lock, held shared
# by every process using the WAL index, so that none resets it under another): the pid
_DMS_HOLDER = """
import fcntl, os, struct, sys
fd = os.open(sys.argv[1], os.O_RDWR)
lock = struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, 128, 1, 0)
kind, _, _, _, pid = struct.unpack("hhqqi4x", fcntl.fcntl(fd, fcntl.F_GETLK, lock))
print(pid if kind != fcntl.F_UNLCK else 0)
"""


@pytest.mark.skipif(
    sys.platform != "linux" or struct.calcsize("q") != 8, reason="reads Linux's struct flock"
)
async def test_sqlites_own_lock_on_the_wal_index_holds_while_the_storage_reads(
    open_storage: OpenStorage,
) -> None:
    """POSIX drops every lock a process holds on a file when it closes any descriptor of that
    file: code that opened and closed the ``-shm`` file beside SQLite (to read its header, say)
    released SQLite's lock, and the next process to open the database reset the WAL index
    under this one (a bus error, or reads of old pages). The lock must still be ours after
    reads, writes and a cached read."""
    subject = await open_storage("sqlite")
    try:
        await save(subject, user("Ann"))
        assert await name_seen(subject) == "Ann"
        assert await name_seen(subject) == "Ann"
        assert subject.storage.read_stamp() is not None
        shm = f"{_sqlite(subject).path}-shm"
        probe = await asyncio.create_subprocess_exec(
            sys.executable, "-c", _DMS_HOLDER, shm, stdout=asyncio.subprocess.PIPE
        )
        out, _ = await asyncio.wait_for(probe.communicate(), 30)
        assert int(out) == os.getpid()
    finally:
        await subject.close()


@pytest.mark.postgres
async def test_postgres_unit_of_work_takes_a_connection_at_its_first_statement(
    open_storage: OpenStorage,
) -> None:
    """Not on entering: a unit of work that first stores blobs elsewhere (files, a large
    blob's own transaction) holds no pooled connection meanwhile, so a handful of large
    uploads cannot use up the pool other requests wait on."""
    subject = await open_storage("postgres")
    storage: Any = subject.storage
    try:
        await save(subject, user("Ann"))
        pool = storage._pool
        before = pool.get_stats().get("requests_num", 0)
        async with subject.unit_of_work() as uow:
            assert pool.get_stats().get("requests_num", 0) == before
            await uow.commit()  # nothing sent: nothing to commit, no connection taken
            assert pool.get_stats().get("requests_num", 0) == before
        async with subject.unit_of_work() as uow:
            ann = await uow.repository(USERS).get(user("Ann").id)
            assert ann is not None
            assert pool.get_stats().get("requests_num", 0) == before + 1
            await uow.repository(USERS).update(attrs.evolve(ann, name="Anna"))
            await uow.commit()
        assert pool.get_stats().get("requests_num", 0) == before + 1
        async with subject.unit_of_work() as uow:
            again = await uow.repository(USERS).get(ann.id)
            assert again is not None and again.name == "Anna"
    finally:
        await subject.close()
