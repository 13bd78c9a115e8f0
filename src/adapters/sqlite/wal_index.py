"""Noticing other connections' commits for the cost of a memory read: the WAL-index header.

``PRAGMA data_version`` moves when another connection commits, but asking it opens and ends a
read transaction: three system calls (a shared lock on a read mark of the ``-shm`` file, a
``stat`` of the database file, the unlock), several microseconds on every reading unit of work
and every authenticated request, the one thing SQLite's path spent that PostgreSQL's did not.

In WAL mode a commit, of any connection of any process, is published by writing the
WAL-index header: the first 96 bytes of the ``-shm`` file, two copies of a 48-byte header
holding a counter of transactions (``iChange``), the last committed frame, the salts and a
checksum (https://www.sqlite.org/walformat.html, "The WAL-Index Format": a file format, kept
by every SQLite version that may share the database). Readers find new commits through it, so
a commit that has finished has changed it. ``WalIndex`` maps those bytes read-only. While they
are the bytes read just before the last ``PRAGMA data_version``, no connection has committed
since, and the pragma would answer the same: it is asked only when they differ (a commit
here or elsewhere, a checkpoint that restarted the log).

This holds only in WAL mode, checked when mapping: our open connection holds a shared lock
on the database file, so no other connection can take it out of WAL mode (that needs an
exclusive lock) while it is open. The map is made after the connection has read (it then has
the ``-shm`` file open, holding the lock that keeps any other connection from truncating it
under the map) and dropped before the connection is closed. When anything is not as expected
(no ``-shm`` file, not WAL mode, an uninitialised header) there is no map, and every look asks
the pragma, as before.
"""

from __future__ import annotations

import mmap
import os
import pathlib
import sqlite3

#: the two copies of the WAL-index header
HEADER_BYTES = 96
_VERSION = (3007000).to_bytes(4, "little"), (3007000).to_bytes(4, "big")  # iVersion, native order
_IS_INIT = 12  # offset of the isInit flag, 1 once initialised


class WalIndex:
    """The WAL-index header of one open connection's database, read through a map."""

    def __init__(self) -> None:
        self._map: mmap.mmap | None = None

    def open(self, conn: sqlite3.Connection, path: pathlib.Path) -> None:
        """Map the header of ``path``'s ``-shm`` file, if ``conn`` (open, and having read) is in
        WAL mode and the header is initialised; otherwise ``header`` stays ``None``."""
        self.close()
        try:
            mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        except sqlite3.Error:
            return
        if str(mode).lower() != "wal":
            return
        try:
            fd = os.open(f"{path}-shm", os.O_RDONLY)
        except OSError:
            return
        try:
            if os.fstat(fd).st_size < HEADER_BYTES:
                return
            mapped = mmap.mmap(fd, HEADER_BYTES, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            return
        finally:
            os.close(fd)
        if mapped[:4] not in _VERSION or mapped[_IS_INIT] != 1:
            mapped.close()
            return
        self._map = mapped

    def header(self) -> bytes | None:
        """The header's bytes now; ``None`` when not mapped."""
        mapped = self._map
        return mapped[:HEADER_BYTES] if mapped is not None else None

    def close(self) -> None:
        mapped, self._map = self._map, None
        if mapped is not None:
            mapped.close()
