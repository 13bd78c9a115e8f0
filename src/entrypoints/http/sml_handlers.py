"""Handlers of a participant's registration in the network's SML: preparing its move away."""

from __future__ import annotations

import cattrs
from dependency_injector.wiring import Provide

from fourcorner.application import sml
from fourcorner.application.context import Context
from fourcorner.entrypoints.http.routing import Reply, Req
from fourcorner.entrypoints.http.views import View

MIGRATION_KEY = View(sml.PreparedMigration, "MigrationKey")


async def prepare_migration(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    prepared = await sml.prepare_migration(
        ctx, req.caller, req.path_uuid("orgId"), req.path_uuid("participantId")
    )
    return Reply(201, MIGRATION_KEY.dump(conv, prepared))
