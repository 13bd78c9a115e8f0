"""Preparing the move of a participant registered here to another SMP (``PrepareToMigrate``).

The SML is asked at once, by the request (no outbox task): the key made here is answered this
once and not kept. The move into this SMP, with a key from the participant's current SMP, is a
wish of the outbox (``application.sml.wish_registered`` with a migration key).
"""

from __future__ import annotations

import logging
import secrets
import uuid

import attrs

from fourcorner.application.access import Principal, authorise
from fourcorner.application.collections import PARTICIPANTS
from fourcorner.application.context import Context, Network
from fourcorner.application.locator import LocatorError
from fourcorner.application.scoped import owned
from fourcorner.domain.errors import Conflict, LocatorRefused, LocatorUnavailable
from fourcorner.domain.network_services import Environment
from fourcorner.domain.participant import Participant, ParticipantStatus
from fourcorner.domain.roles import Role
from fourcorner.domain.sml import new_migration_key

log = logging.getLogger("fourcorner.sml")


@attrs.frozen
class PreparedMigration:
    participant_id: uuid.UUID
    participant_identifier: str
    environment: Environment
    migration_key: str


async def prepare_migration(
    ctx: Context, net: Network, principal: Principal, org_id: uuid.UUID, pid: uuid.UUID
) -> PreparedMigration:
    """Prepare the move of a participant to another SMP (``PrepareToMigrate``): the key, made
    here, is given to the new SMP's provider, who completes the move with it. It is answered
    this once and not kept. The participant stays served here until the move completes."""
    async with ctx.uow() as uow:
        await authorise(uow, principal, org_id, Role.ORGADMIN)
        p: Participant = await owned(uow, PARTICIPANTS, org_id, pid, "participant")
    env = p.environment
    if not net.locator.serves(env):
        raise Conflict(
            reason=f"no SML is configured for {env.value}, so there is no registration to move"
        )
    if p.status is not ParticipantStatus.ACTIVE:
        raise Conflict(
            reason=f"the participant is {p.status.value} in the {env.value} SML; a move can be "
            "prepared once it is ACTIVE"
        )
    key = new_migration_key(secrets.choice, secrets.SystemRandom().shuffle)
    try:
        await net.locator.prepare_migration(env, p.identifier_key, key)
    except LocatorError as e:
        if e.transient:
            raise LocatorUnavailable(reason=e.reason) from None
        raise LocatorRefused(reason=e.reason) from None
    log.info(
        "SML migration prepared",
        extra={"event": "sml.migration_prepared", "participant": p.identifier_key},
    )
    return PreparedMigration(p.id, p.participant_identifier, env, key)
