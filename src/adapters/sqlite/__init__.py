"""The storage port on an embedded SQLite file (the default for one process)."""

from fourcorner.adapters.sqlite.storage import SqliteStorage, SqliteUnitOfWork

__all__ = ["SqliteStorage", "SqliteUnitOfWork"]
