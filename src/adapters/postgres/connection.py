"""The PostgreSQL adapter's connections: how they are opened, and how driver errors become
domain errors.

Connections are in autocommit mode (a unit of work opens its transaction itself, lazily) and
keep the tables of the storage's schema, when it has one, on their ``search_path``.
``psycopg.errors.UniqueViolation`` becomes ``domain.errors.Conflict``, text holding U+0000
(which PostgreSQL cannot store) becomes ``domain.errors.InvalidInput``, a deadlock PostgreSQL
broke or a transaction it could not serialise becomes ``domain.errors.ConcurrentChange`` (a
transient conflict, logged as such: ``storage.conflict``), and every other ``psycopg.Error``
(connection lost, pool exhausted, server shutting down) becomes
``domain.errors.ServiceUnavailable``.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

import psycopg
from psycopg import errors
from psycopg.pq import TransactionStatus
from psycopg_pool import PoolTimeout

from fourcorner.domain.errors import (
    ConcurrentChange,
    Conflict,
    DomainError,
    InvalidInput,
    ServiceUnavailable,
)

Connection = psycopg.AsyncConnection[Any]

log = logging.getLogger("fourcorner.storage")

# transactions PostgreSQL rolled back for meeting another: a deadlock it broke (40P01), or one
# it could not serialise with another (40001)
_CONCURRENT = (errors.DeadlockDetected, errors.SerializationFailure)


def translate(e: psycopg.Error) -> DomainError:
    if isinstance(e, errors.UniqueViolation):
        return Conflict(reason="a record with this id or unique key exists")
    if isinstance(e, _CONCURRENT):
        log.warning(
            "a transaction was rolled back for conflicting with another: %s",
            e.diag.message_primary,
            extra={
                "event": "storage.conflict",
                "sqlstate": e.sqlstate,
                "detail": e.diag.message_detail or "",
                "where": e.diag.context or "",
            },
        )
        return ConcurrentChange()
    if isinstance(e, psycopg.DataError) and "NUL" in str(e):
        # PostgreSQL text cannot hold U+0000 (SQLite and memory can): refuse the value.
        return InvalidInput.one("$", "text may not contain the character U+0000")
    if isinstance(e, PoolTimeout):
        return ServiceUnavailable(reason="no database connection came free in time")
    if isinstance(e, psycopg.OperationalError | psycopg.InterfaceError):
        return ServiceUnavailable(reason="the database cannot be reached")
    return ServiceUnavailable(reason="the database refused a statement")


def connect_kwargs(schema: str | None) -> dict[str, Any]:
    """The keyword arguments of every connection of a storage in ``schema``."""
    kwargs: dict[str, Any] = {"autocommit": True}
    if schema is not None:
        kwargs["options"] = f"-c search_path={schema}"
    return kwargs


async def roll_back(conn: Connection) -> None:
    """End the connection's open transaction, if any. A failed one (a statement refused)
    ends with psycopg's ``rollback``, which also drops the connection's prepared statements
    (``DEALLOCATE ALL``, a round trip more): psycopg takes a statement for prepared once it
    has sent its ``PREPARE``, and a pipeline refused before it never ran it (``prepared
    statement "_pg3_n" does not exist`` at its next use). Else a plain ``ROLLBACK``."""
    status = conn.info.transaction_status
    if status is TransactionStatus.INERROR:
        await conn.rollback()
    elif status is not TransactionStatus.IDLE:
        await conn.execute("ROLLBACK", prepare=False)


async def roll_back_quietly(conn: Connection) -> None:
    """``roll_back``; a broken connection is left as it is (the pool discards it, and the
    error being raised already says the database is unavailable)."""
    with contextlib.suppress(psycopg.Error):
        await roll_back(conn)
