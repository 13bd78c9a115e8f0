"""Versioned schema migrations for the SQL storage adapters, and the runner that applies them.

Each migration is a pair of files in this package, ``NNNN_name.sqlite.sql`` and
``NNNN_name.postgres.sql``, with the same number and name. A released migration is never
edited: a schema change is a new file with the next number. To add a collection, add it to
``application.collections.ALL`` and run ``python -m fourcorner.adapters.sql.migrations NAME``, which
writes the next pair with ``adapters.sql.table.ddl_script`` for the collections that have no
table yet. The contract tests (``tests/contract/test_migrations.py``) check that the migrated
schema has, for every collection in ``ALL``, a table with its columns and unique groups.

The runner keeps ``schema_migrations(version, name, applied_at)``, applies each pending
migration in a transaction of its own (its statements and its bookkeeping row commit
together or not at all), and re-reads the applied versions under the migration lock in each
of those transactions, so running it twice, or from several processes at once, applies every
migration exactly once. The lock is the dialect's: ``pg_advisory_xact_lock`` in PostgreSQL,
``BEGIN IMMEDIATE`` in SQLite. Each adapter supplies a ``MigrationTarget`` for its driver.

We wrote this small runner rather than use yoyo-migrations because yoyo is synchronous only:
it would need a second, blocking driver path (and its own connection handling) next to the
asyncio drivers the adapters use, for a job that is forty lines here.
"""

from __future__ import annotations

import importlib.resources
import logging
import re
from collections.abc import Sequence
from typing import Protocol

import attrs

log = logging.getLogger("fourcorner.storage")

_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.(sqlite|postgres)\.sql$")
DIALECTS = ("sqlite", "postgres")


@attrs.frozen
class Migration:
    version: int
    name: str
    sql: str = attrs.field(repr=False)

    @property
    def label(self) -> str:
        return f"{self.version:04d}_{self.name}"


def load(dialect: str) -> tuple[Migration, ...]:
    """The migrations of ``dialect``, in version order."""
    if dialect not in DIALECTS:
        raise ValueError(f"no migrations for dialect {dialect!r}")
    found: dict[int, Migration] = {}
    for entry in importlib.resources.files(__name__).iterdir():
        match = _FILE.match(entry.name)
        if match is None or match[3] != dialect:
            continue
        version = int(match[1])
        if version in found:
            raise ValueError(f"two {dialect} migrations have version {version}")
        found[version] = Migration(version, match[2], entry.read_text(encoding="utf-8"))
    return tuple(found[v] for v in sorted(found))


class MigrationTarget(Protocol):
    """One database connection as the runner needs it."""

    async def begin(self) -> None:
        """Start a transaction that holds the migration lock until it ends."""
        ...

    async def prepare(self) -> None:
        """Create ``schema_migrations`` (and the schema it lives in) when missing."""
        ...

    async def applied(self) -> set[int]: ...

    async def apply(self, migration: Migration) -> None:
        """Run the migration's statements and record it in ``schema_migrations``."""
        ...

    async def commit(self) -> None: ...

    async def rollback(self) -> None: ...


async def apply_pending(
    target: MigrationTarget, migrations: Sequence[Migration]
) -> list[Migration]:
    """Apply the migrations not yet recorded, each in its own transaction; return them."""
    await target.begin()
    try:
        await target.prepare()
        done = await target.applied()
        await target.commit()
    except BaseException:
        await target.rollback()
        raise
    applied: list[Migration] = []
    for migration in migrations:
        if migration.version in done:
            continue
        await target.begin()
        try:
            # Another process may have applied it since we looked: look again, under the lock.
            if migration.version not in await target.applied():
                await target.apply(migration)
                applied.append(migration)
            await target.commit()
        except BaseException:
            await target.rollback()
            raise
        if migration in applied:
            log.info(
                "migration applied",
                extra={"event": "migration.applied", "migration": migration.label},
            )
    return applied
