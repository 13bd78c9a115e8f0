"""The in-memory core as the stateful tests start it: the operator set up, one signed-in user
with an organisation, and the SMP and access point (TEST) that organisation may use."""

from __future__ import annotations

import uuid
from typing import Any

import attrs

from fourcorner.application import operator_setup, organisations, services_to_use, users
from fourcorner.application.access import Principal
from fourcorner.application.identity import Identity
from fourcorner.application.organisations import CreateOrganisation
from fourcorner.entrypoints.container import resolve


@attrs.frozen
class World:
    ctx: Any
    net: Any
    me: Principal
    org: uuid.UUID
    smp: uuid.UUID
    ap: uuid.UUID


async def started(container: Any) -> World:
    """``container``'s resources opened, the operator set up, and a user's organisation."""
    await container.init_resources()
    ctx = await resolve(container.context)
    net = await resolve(container.network)
    await operator_setup.ensure_operator(ctx, net, container.operator_environments())
    me = Principal(user=await users.sign_in(ctx, Identity("u1", "u@example.com", "U")))
    org = await organisations.create(
        ctx, me, CreateOrganisation("2120000787", "ACME", "SE", "SE:ORGNR")
    )
    smps = (await services_to_use.smps_to_use(ctx, me, org.id)).items
    aps = (await services_to_use.aps_to_use(ctx, me, org.id)).items
    return World(ctx, net, me, org.id, smps[0].id, aps[0].id)
