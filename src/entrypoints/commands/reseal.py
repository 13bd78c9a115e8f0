"""``fourcorner reseal``: seal every stored secret again under the current at-rest key, the
last step but one of rotating that key (docs/operations.md, "Rotating keys")."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from fourcorner.entrypoints import preflight
from fourcorner.entrypoints.commands.common import DB_WAIT, database_location, say
from fourcorner.entrypoints.config import Settings
from fourcorner.entrypoints.preflight import StartupError
from fourcorner.entrypoints.setting_values import PREFIX

SHOWN = 10  # unopened secrets named one a line; the rest are counted


def reseal(settings: Settings, db_wait: float = DB_WAIT, out: Callable[[str], None] = print) -> int:
    """Seal again what is not sealed under the current key (``sealed.reseal_all``, rotating),
    print how many were and how many could not be opened (named on stderr); 0 when every
    stored secret opens with the current key now, else 1."""
    where = database_location(settings)
    if settings.storage_kind == "memory":
        out(f"{where} keeps nothing between runs: there is nothing to reseal")
        return 0
    from fourcorner.application.sealed import Resealed
    from fourcorner.entrypoints.container import build_container

    preflight.data_dir(settings)
    key_file = preflight.at_rest_key_file(settings)
    if key_file is not None and not key_file.exists():
        raise StartupError(
            f"there is no at-rest key to seal under: {key_file} does not exist and "
            f"{PREFIX}AT_REST_KEY is unset; set {PREFIX}AT_REST_KEY to the new key"
        )
    preflight.wait_for_database(settings, db_wait, say)
    done: Resealed = asyncio.run(_reseal(build_container(settings)))
    out(
        f"resealed {done.resealed} stored secret(s) in {where} under the current at-rest key; "
        f"{len(done.unopened)} could not be opened"
    )
    for line in done.unopened[:SHOWN]:
        say(f"error: {line} is left as it is: neither at-rest key opens it")
    if len(done.unopened) > SHOWN:
        say(f"error: and {len(done.unopened) - SHOWN} more")
    if done.unopened:
        say(
            f"error: set {PREFIX}AT_REST_KEY_PREVIOUS to the key that sealed them, and run "
            "fourcorner reseal again"
        )
    return 1 if done.unopened else 0


async def _reseal(container: Any) -> Any:
    """Only the storage is opened (and migrated, as ``serve`` would): no worker, no other
    resource."""
    from fourcorner.application import sealed
    from fourcorner.entrypoints.container import resolve, settle

    try:
        ctx = await resolve(container.context)
        return await sealed.reseal_all(ctx, await resolve(container.sealer), rotate=True)
    finally:
        await settle(container.shutdown_resources())
