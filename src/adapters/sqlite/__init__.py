"""The storage port on an embedded SQLite file (the default for one process)."""

from adapters.sqlite.storage import SqliteStorage, SqliteUnitOfWork

__all__ = ["SqliteStorage", "SqliteUnitOfWork"]
