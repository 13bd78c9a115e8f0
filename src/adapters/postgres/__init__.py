"""The storage port on PostgreSQL (many processes, one database)."""

from fourcorner.adapters.postgres.storage import PostgresStorage
from fourcorner.adapters.postgres.unit_of_work import PostgresUnitOfWork

__all__ = ["PostgresStorage", "PostgresUnitOfWork"]
