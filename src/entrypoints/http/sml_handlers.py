"""Handlers of a participant's registration in the network's SML: preparing its move away."""

from __future__ import annotations

import cattrs
from dependency_injector.wiring import Provide

from fourcorner.application import sml
from fourcorner.application.context import Context, Network
from fourcorner.domain.roles import Role
from fourcorner.entrypoints.http import responses
from fourcorner.entrypoints.http.routing import Reply, Req, Route


async def prepare_migration(
    req: Req,
    ctx: Context = Provide["context"],
    net: Network = Provide["network"],
    conv: cattrs.Converter = Provide["converter"],
) -> Reply:
    prepared = await sml.prepare_migration(
        ctx, net, req.caller, req.path_uuid("orgId"), req.path_uuid("participantId")
    )
    return Reply(201, responses.MIGRATION_KEY.dump(conv, prepared))


# --- routes ---------------------------------------------------------------------------------

ROUTES = (
    Route(
        "POST",
        "/orgs/{orgId}/participants/{participantId}/migration_key",
        prepare_migration,
        "Prepare the participant's move to another SMP in the network's SML; the migration key "
        "is in the answer, this once only.",
        Role.ORGADMIN,
        "participants",
        response=responses.MIGRATION_KEY,
        status=201,
        errors=("AT-1090", "AT-1104", "AT-1503"),
    ),
)
