"""``fourcorner migrate``: apply the schema's pending migrations, then the data migrations."""

from __future__ import annotations

import asyncio
from typing import Any

from fourcorner.entrypoints import preflight
from fourcorner.entrypoints.commands.common import DB_WAIT, database_location, say
from fourcorner.entrypoints.config import Settings


def migrate(settings: Settings, db_wait: float = DB_WAIT) -> str:
    """Apply the pending migrations; the line that says which (or that none were)."""
    where = database_location(settings)
    if settings.storage_kind == "memory":
        return f"{where} keeps nothing between runs: there is nothing to migrate"
    from fourcorner.entrypoints.container import build_container

    preflight.data_dir(settings)
    preflight.wait_for_database(settings, db_wait, say)
    applied = asyncio.run(apply_migrations(build_container(settings)))
    if not applied:
        return f"{where} is up to date: no migration to apply"
    labels = ", ".join(m.label for m in applied)
    return f"applied {len(applied)} migration{'s' if len(applied) > 1 else ''} to {where}: {labels}"


async def apply_migrations(container: Any) -> list[Any]:
    """The schema's migrations (which were applied), then the data migrations, which need
    the application's ports (see ``container.migrate_data``). Only what those use is opened:
    not the operator's certificates, which ``serve`` stores (and, without
    ``FOURCORNER_OPERATOR_CERTS_DIR``, makes as a test PKI) at its first start."""
    from fourcorner.entrypoints.container import migrate_data, settle

    applied: list[Any] = await container.storage_adapter().migrate()
    try:
        await migrate_data(container)
    finally:
        await settle(container.shutdown_resources())
    return applied
