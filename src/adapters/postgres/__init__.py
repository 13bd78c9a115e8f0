"""The storage port on PostgreSQL (many processes, one database)."""

from adapters.postgres.storage import PostgresStorage, PostgresUnitOfWork

__all__ = ["PostgresStorage", "PostgresUnitOfWork"]
