"""The blob store port on PostgreSQL: documents, receipts and artefacts in the database, so
that processes on several machines share them with nothing but the database in common.

A blob is a row of ``blobs`` (key, version, size, when it was stored) and its content in rows
of ``blob_chunks``, ``CHUNK`` (1 MiB) each, numbered from 0 (migration 0011). Blobs go in and
come out a piece at a time, never whole in memory (but through ``put`` and ``get``, whose
callers hold the whole blob anyway):

- ``adopt`` copies an upload streamed to a local file (``incoming``, in a spool folder of the
  process's own, ``adapters.blobs.spool``) into the database a piece at a time, in one
  transaction, then removes the file; ``put`` stores bytes already in memory the same way. A
  blob is stored under a fresh version: the transaction writes the row (taking its lock, so
  two writers of one key take turns) and the new chunks, and a row replaced removes the
  chunks of the version it had (the trigger of migration 0021, which sees what a writer
  before it committed, as the row lock made it wait), so a blob exists whole or not at all,
  and ``put``/``adopt`` return once it is committed (durable). Blobs of one piece (most:
  documents, receipts, reports) are one statement, without ``BEGIN``/``COMMIT``, however
  many there are: the rows with their pieces (``_PIECES``, the rows' locks taken in the keys'
  order; ``_PIECE`` for one blob), one implicit transaction; larger blobs take one round trip
  per piece (the statements pipelined).
  ``put_all`` stores the one-piece blobs it is given (a transaction's document, receipt and
  validation reports) in one such round trip and one commit; ``put_all_in`` hands the same
  statement to a unit of work of the storage on this database (``write_later``), so they
  go out with its next statement or its commit and are durable with the records naming them.
- ``chunks`` reads the first piece with the blob's row, then each further one by version and
  number, a statement (and a pooled connection, only for that statement) each: a slow reader
  holds no connection, and a blob stored again or removed meanwhile ends the reading with
  ``FileNotFoundError`` instead of mixing versions. ``get`` joins the pieces; ``local``
  streams them to a temporary file in the spool folder for readers that need a file.
- ``stored`` lists keys by ``stored_at`` in pages (keyset on the key), for the sweep;
  ``discard_incoming`` cleans the spool folder.

``files``: the file store blobs were kept in before (``<data dir>/blobs``), read when a key is
not in the database, listed by ``stored`` and removed by ``delete``, so that switching an
installation to this store loses nothing; new blobs all go to the database.

The store has a connection pool of its own (``max_size`` connections at most, opened as they
are needed), beside the storage's; the tables are made by the storage's migrations, which must
have run (``PostgresStorage.open`` or ``fourcorner migrate``). ``psycopg.Error`` becomes
``domain.errors.ServiceUnavailable``.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from fourcorner.adapters.blobs.filesystem import FileBlobStore
from fourcorner.adapters.blobs.spool import CHUNK, Spool, file_chunks
from fourcorner.adapters.postgres.unit_of_work import PostgresUnitOfWork
from fourcorner.application.storage import UnitOfWork
from fourcorner.domain.errors import ServiceUnavailable

Connection = AsyncConnection[Any]

_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,200}")
_SCHEMA = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
PAGE = 1000  # keys per statement when listing

_UPSERT = (
    "INSERT INTO blobs (key, version, size, stored_at) VALUES (%s, %s, %s, %s) "
    "ON CONFLICT (key) DO UPDATE SET version = EXCLUDED.version, size = EXCLUDED.size, "
    "stored_at = EXCLUDED.stored_at"
)
# An adopted file of at most this size is read on the event loop (the usual document: a
# thread hop cost more than the read), and this many adopted files are removed there too.
INLINE_READ = 256 * 1024
INLINE_UNLINKS = 4
_ADD_CHUNK = "INSERT INTO blob_chunks (key, version, seq, data) VALUES (%s, %s, %s, %b)"
# the rows (their locks taken in the keys' order) and their one piece each, in one statement
# (a row replaced: its old version's chunks removed by the trigger of migration 0021)
_PIECES = (
    "WITH new AS (SELECT * FROM unnest(%s::text[], %s::uuid[], %s::bigint[], %b::bytea[]) "
    "WITH ORDINALITY AS n(key, version, size, data, i)), "
    "row AS (INSERT INTO blobs (key, version, size, stored_at) "
    "SELECT key, version, size, %s FROM new ORDER BY i "
    "ON CONFLICT (key) DO UPDATE SET version = EXCLUDED.version, size = EXCLUDED.size, "
    "stored_at = EXCLUDED.stored_at RETURNING key, version) "
    "INSERT INTO blob_chunks (key, version, seq, data) "
    "SELECT new.key, new.version, 0, new.data FROM new JOIN row USING (key, version)"
)
# one blob's row and its one piece (scalar parameters: lighter to send than arrays of one)
_PIECE = (
    "WITH row AS (INSERT INTO blobs (key, version, size, stored_at) VALUES (%s, %s, %s, %s) "
    "ON CONFLICT (key) DO UPDATE SET version = EXCLUDED.version, size = EXCLUDED.size, "
    "stored_at = EXCLUDED.stored_at RETURNING key, version) "
    "INSERT INTO blob_chunks (key, version, seq, data) SELECT key, version, 0, %b FROM row"
)
_SET_SIZE = "UPDATE blobs SET size = %s WHERE key = %s AND version = %s"
_HEAD = (
    "SELECT b.version, b.size, c.data FROM blobs b LEFT JOIN blob_chunks c "
    "ON c.key = b.key AND c.version = b.version AND c.seq = 0 WHERE b.key = %s"
)
_NEXT = "SELECT data FROM blob_chunks WHERE key = %s AND version = %s AND seq = %s"
_DELETE = "DELETE FROM blobs WHERE key = %s"
_DELETE_ALL = "DELETE FROM blobs WHERE key = ANY(%s::text[])"
_STORED = "SELECT key FROM blobs WHERE stored_at < %s AND key > %s ORDER BY key LIMIT %s"


def _now() -> datetime:
    return datetime.now(UTC)


def _unavailable(e: psycopg.Error) -> ServiceUnavailable:
    if isinstance(e, PoolTimeout):
        return ServiceUnavailable(reason="no database connection came free in time")
    if isinstance(e, psycopg.OperationalError | psycopg.InterfaceError):
        return ServiceUnavailable(reason="the database cannot be reached")
    return ServiceUnavailable(reason="the database refused a statement")


def _check(key: str) -> str:
    if not _KEY.fullmatch(key):
        raise ValueError(f"{key!r} is not a blob key")
    return key


class _Missing(Exception):
    """The key is not in the database (then the file store, if any, is asked)."""


class PostgresBlobStore:
    """Blobs in the PostgreSQL database at ``url``, in ``schema`` when given (the storage's).
    ``spool``: the local folder uploads are streamed to (``<data dir>/blobs/incoming``)."""

    def __init__(
        self,
        url: str,
        *,
        spool: Path,
        schema: str | None = None,
        max_size: int = 10,
        timeout: float = 10.0,
        files: FileBlobStore | None = None,
        clock: Callable[[], datetime] = _now,
    ) -> None:
        if schema is not None and not _SCHEMA.match(schema):
            raise ValueError(f"schema {schema!r} is not a plain identifier")
        self._url = url
        self._schema = schema
        self._max_size = max_size
        self._timeout = timeout
        self._spool = Spool(spool)
        self._files = files
        self._clock = clock
        self._pool: AsyncConnectionPool[Connection] | None = None

    # --- lifecycle ---------------------------------------------------------------------------

    async def open(self) -> None:
        """Open the pool, with one connection to begin with (more as they are needed)."""
        if self._pool is not None:
            return
        kwargs: dict[str, Any] = {"autocommit": True}
        if self._schema is not None:
            kwargs["options"] = f"-c search_path={self._schema}"
        pool: AsyncConnectionPool[Connection] = AsyncConnectionPool(
            self._url,
            min_size=1,
            max_size=self._max_size,
            kwargs=kwargs,
            timeout=self._timeout,
            open=False,
            name="fourcorner-blobs",
        )
        try:
            await pool.open(wait=True, timeout=self._timeout)
        except BaseException as e:
            await pool.close()
            if isinstance(e, psycopg.Error):
                raise _unavailable(e) from e
            raise
        self._pool = pool

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[Connection]:
        if self._pool is None:
            raise ServiceUnavailable(reason="the blob store is not open")
        try:
            async with self._pool.connection() as conn:
                yield conn
        except psycopg.Error as e:
            raise _unavailable(e) from e

    # --- writing -----------------------------------------------------------------------------

    def incoming(self) -> Path:
        return self._spool.incoming()

    async def adopt(self, key: str, incoming: Path) -> int:
        return (await self.put_all([(key, incoming)]))[0]

    async def put(self, key: str, data: bytes) -> int:
        return (await self.put_all([(key, data)]))[0]

    async def put_all(self, blobs: Sequence[tuple[str, bytes | Path]]) -> list[int]:
        """The blobs of one piece (most) all in one round trip and one commit
        (``_pieces_at_once``); each larger one in a transaction of its own (``_write``).
        A key given twice stores its last blob, whatever their sizes. Adopted files are
        removed once all are stored."""
        return await self._put_all(blobs, self._pieces_at_once)

    async def put_all_in(
        self, uow: UnitOfWork, blobs: Sequence[tuple[str, bytes | Path]]
    ) -> list[int]:
        """As ``put_all``, but when ``uow`` writes to this database the blobs of one piece go
        in its transaction (``write_later``: sent with its next statement or its commit, no
        round trip of their own), durable with its commit; the larger ones are stored first,
        each in a transaction of its own."""
        if not (isinstance(uow, PostgresUnitOfWork) and uow.writes_to(self._url, self._schema)):
            return await self.put_all(blobs)

        async def later(pieces: list[tuple[str, bytes]]) -> None:
            for query, params in self._statements(pieces):
                await uow.write_later(query, params)

        return await self._put_all(blobs, later)

    async def _put_all(
        self,
        blobs: Sequence[tuple[str, bytes | Path]],
        small: Callable[[list[tuple[str, bytes]]], Awaitable[None]],
    ) -> list[int]:
        """Each larger blob stored (``_write``), then ``small`` given the blobs of one piece;
        adopted files removed once all are given."""
        last = {_check(key): i for i, (key, _) in enumerate(blobs)}
        sizes: list[int] = []
        pieces: list[bytes | None] = []  # each blob's one piece; None when it has more
        first: bytes | None
        for _, source in blobs:
            if isinstance(source, bytes):
                size, first = len(source), source
            else:  # one piece: read whole (held in memory anyway), unless it grew meanwhile
                small_file = source.stat().st_size <= INLINE_READ  # a quick system call
                size, first = (
                    _first_piece(source)
                    if small_file
                    else await asyncio.to_thread(_first_piece, source)
                )
            if first is not None and 0 < len(first) <= CHUNK:
                pieces.append(first)
                sizes.append(len(first))
            else:
                pieces.append(None)
                sizes.append(size)
        for i, ((key, source), piece) in enumerate(zip(blobs, pieces, strict=True)):
            if piece is not None or last[key] != i:
                continue
            if isinstance(source, bytes):
                sizes[i] = await self._write(key, _memory_pieces(source), len(source))
            else:
                sizes[i] = await self._write(key, file_chunks(source), sizes[i])
        await small(
            [
                (key, piece)
                for i, ((key, _), piece) in enumerate(zip(blobs, pieces, strict=True))
                if piece is not None and last[key] == i
            ]
        )
        adopted = [source for _, source in blobs if isinstance(source, Path)]
        if len(adopted) <= INLINE_UNLINKS:
            _unlink_all(adopted)  # a quick system call each
        else:
            await asyncio.to_thread(_unlink_all, adopted)
        return sizes

    async def _write(
        self, key: str, pieces: AsyncIterator[bytes] | AsyncIterator[memoryview], size: int
    ) -> int:
        """Store ``pieces`` (``size`` bytes, as far as the caller knows) as the blob ``key``
        in one transaction; returns the size written."""
        version = uuid.uuid4()
        written = 0
        async with (
            self._connection() as conn,
            conn.pipeline() as pipeline,
            conn.transaction(),
        ):
            await conn.execute(_UPSERT, (key, version, size, self._clock()))
            seq = 0
            async for piece in pieces:
                await conn.execute(_ADD_CHUNK, (key, version, seq, piece))
                written += len(piece)
                seq += 1
                if written < size:
                    await pipeline.sync()  # one piece in flight at a time
            if written != size:  # the file changed while it was read: record what was
                await conn.execute(_SET_SIZE, (written, key, version))
        return written

    def _statements(self, blobs: list[tuple[str, bytes]]) -> list[tuple[str, Sequence[object]]]:
        """The statement that stores each ``(key, data)`` (at most one piece each) as that
        blob; keys in order, so two writers lock shared keys in turn."""
        if not blobs:
            return []
        at = self._clock()
        ordered = sorted(dict(blobs).items())  # a key given twice: the last one, as stored in turn
        if len(ordered) == 1:  # the same statement, for one blob (``put``)
            ((key, data),) = ordered
            return [(_PIECE, (key, uuid.uuid4(), len(data), at, data))]
        keys = [key for key, _ in ordered]
        versions = [uuid.uuid4() for _ in ordered]
        sizes = [len(data) for _, data in ordered]
        pieces = [data for _, data in ordered]
        return [(_PIECES, (keys, versions, sizes, pieces, at))]

    async def _pieces_at_once(self, blobs: list[tuple[str, bytes]]) -> None:
        """Store each ``(key, data)`` (``_statements``) in one round trip."""
        statements = self._statements(blobs)
        if not statements:
            return
        # autocommit: the statements before the pipeline's sync are one implicit transaction
        # (all or nothing), lighter than BEGIN ... COMMIT around them
        async with self._connection() as conn:
            try:
                async with conn.pipeline():
                    for query, params in statements:
                        await conn.execute(query, params)
            except psycopg.Error:
                # a statement the refused pipeline never ran may be taken for prepared by
                # psycopg (``roll_back``); outside a transaction nothing clears that but a new
                # connection: this one is closed, and the pool replaces it
                await conn.close()
                raise

    async def delete(self, key: str) -> None:
        async with self._connection() as conn:
            await conn.execute(_DELETE, (_check(key),))
        if self._files is not None:
            await self._files.delete(key)

    async def delete_all(self, keys: Sequence[str]) -> None:
        if not keys:
            return
        async with self._connection() as conn:
            await conn.execute(_DELETE_ALL, ([_check(key) for key in keys],))
        if self._files is not None:
            await self._files.delete_all(keys)

    # --- reading -----------------------------------------------------------------------------

    async def _fetch(self, query: str, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
        async with self._connection() as conn:
            cursor = conn.cursor(binary=True)
            await cursor.execute(query, params)
            row: tuple[Any, ...] | None = await cursor.fetchone()
            await cursor.close()
            return row

    async def _pieces(self, key: str) -> AsyncIterator[bytes]:
        head = await self._fetch(_HEAD, (_check(key),))
        if head is None:
            raise _Missing
        version, size, piece = head
        sent, seq = 0, 0
        while sent < size:
            if piece is None:
                raise FileNotFoundError(f"blob {key!r} was stored again or removed while read")
            yield bytes(piece)
            sent += len(piece)
            seq += 1
            if sent < size:
                row = await self._fetch(_NEXT, (key, version, seq))
                piece = None if row is None else row[0]

    async def chunks(self, key: str) -> AsyncIterator[bytes]:
        pieces = self._pieces(key)
        try:
            first = await anext(pieces, None)
        except _Missing:
            if self._files is None:
                raise FileNotFoundError(f"no blob {key!r}") from None
            async for piece in self._files.chunks(key):
                yield piece
            return
        if first is None:
            return
        yield first
        async for piece in pieces:
            yield piece

    async def get(self, key: str) -> bytes:
        return b"".join([piece async for piece in self.chunks(key)])

    @contextlib.asynccontextmanager
    async def local(self, key: str) -> AsyncIterator[Path]:
        path = self._spool.incoming()
        try:
            file = await asyncio.to_thread(path.open, "wb")
            try:
                async for piece in self.chunks(key):
                    await asyncio.to_thread(file.write, piece)
            finally:
                await asyncio.to_thread(file.close)
            yield path
        finally:
            path.unlink(missing_ok=True)

    def path(self, key: str) -> Path | None:
        return None

    # --- the sweep ---------------------------------------------------------------------------

    async def stored(self, written_before: datetime) -> AsyncIterator[str]:
        after = ""
        while True:
            async with self._connection() as conn:
                cursor = await conn.execute(_STORED, (written_before, after, PAGE))
                keys = [row[0] for row in await cursor.fetchall()]
            for key in keys:
                yield key
            if len(keys) < PAGE:
                break
            after = keys[-1]
        if self._files is not None:
            async for key in self._files.stored(written_before):
                yield key

    async def discard_incoming(self, written_before: datetime) -> int:
        return await self._spool.discard(written_before)


def _first_piece(path: Path) -> tuple[int, bytes | None]:
    """The file's size and, when it is one piece, its first ``CHUNK`` bytes and one more (to
    tell a file that grew past a piece meanwhile)."""
    size = path.stat().st_size
    if not 0 < size <= CHUNK:
        return size, None
    with path.open("rb") as file:
        return size, file.read(CHUNK + 1)


async def _memory_pieces(data: bytes) -> AsyncIterator[memoryview]:
    view = memoryview(data)
    for start in range(0, len(view), CHUNK):
        yield view[start : start + CHUNK]


def _unlink_all(paths: list[Path]) -> None:
    for path in paths:
        path.unlink(missing_ok=True)
