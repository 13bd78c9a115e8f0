"""The SQLite adapter's connection: how it is opened, and how driver errors become domain
errors (a unique clash is ``domain.errors.Conflict``; every other ``sqlite3.Error``, a locked
or unreadable database or a full disk, is ``domain.errors.ServiceUnavailable``)."""

from __future__ import annotations

import pathlib
import sqlite3

from fourcorner.adapters.private import make_dirs, touch
from fourcorner.domain.errors import Conflict, DomainError, ServiceUnavailable

BUSY_TIMEOUT_MS = 5000
_UNIQUE = ("SQLITE_CONSTRAINT_UNIQUE", "SQLITE_CONSTRAINT_PRIMARYKEY")


def translate(e: sqlite3.Error) -> DomainError:
    """A unique clash is a ``Conflict``; anything else leaves the database unavailable."""
    name = getattr(e, "sqlite_errorname", "") or ""
    if isinstance(e, sqlite3.IntegrityError) and (name in _UNIQUE or "UNIQUE" in str(e)):
        return Conflict(reason="a record with this id or unique key exists")
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in str(e):
        return ServiceUnavailable(reason="the database is busy")
    return ServiceUnavailable(reason="the database cannot be read or written")


def connect(path: pathlib.Path) -> sqlite3.Connection:
    """A connection to the database file at ``path`` (its directory made when missing): WAL
    journal, ``synchronous=NORMAL``, foreign keys on, a busy timeout, explicit transactions."""
    try:
        # SQLite gives its -wal and -shm files the database file's mode
        touch(make_dirs(path.parent) / path.name)
        conn = sqlite3.connect(path, isolation_level=None)
    except (OSError, sqlite3.Error) as e:
        raise ServiceUnavailable(reason=f"the database file {path} cannot be opened") from e
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
    except sqlite3.Error as e:
        conn.close()
        raise translate(e) from e
    return conn
