"""The storage port on PostgreSQL (many processes, one database)."""

from fourcorner.adapters.postgres.storage import PostgresStorage, PostgresUnitOfWork

__all__ = ["PostgresStorage", "PostgresUnitOfWork"]
