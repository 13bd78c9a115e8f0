"""``fourcorner migrate``: apply the schema's pending migrations, then the data migrations."""

from __future__ import annotations

import asyncio
from typing import Any

from fourcorner.application import sealed
from fourcorner.entrypoints import preflight
from fourcorner.entrypoints.commands.common import DB_WAIT, database_location, say
from fourcorner.entrypoints.config import Settings
from fourcorner.entrypoints.preflight import StartupError
from fourcorner.entrypoints.setting_values import PREFIX


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
    ``FOURCORNER_OPERATOR_CERTS_DIR``, makes as a test PKI) at its first start, nor the
    at-rest key, which ``serve`` makes in ``keys/`` when none is configured: without one, no
    stored secret is sealed again (none can be sealed with a key that does not exist yet);
    ``StartupError`` when the database holds one all the same (this data dir lacks the
    processes' key)."""
    from fourcorner.entrypoints.container import migrate_data, resolve, settle

    applied: list[Any] = await container.storage_adapter().migrate()
    try:
        key_file = preflight.at_rest_key_file(container.settings())
        if key_file is None or key_file.exists():
            await migrate_data(container)
        else:
            found = await sealed.first_sealed(await resolve(container.context))
            if found is not None:
                raise StartupError(
                    f"the database holds sealed secrets ({found} among them), but this data "
                    f"dir has no at-rest key ({key_file} does not exist, {PREFIX}AT_REST_KEY is "
                    f"not set): "
                    f"copy keys/ from a running process, or set {PREFIX}AT_REST_KEY, and run it "
                    f"again (its schema migrations are applied)"
                )
            await migrate_data(container, reseal=False)
    finally:
        await settle(container.shutdown_resources())
    return applied
