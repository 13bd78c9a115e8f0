"""Registering our SMP and its participants in the network's SML, through an outbox: the wishes.

The port ``ServiceLocator`` is the SML's management interface (``adapters.sml``: SOAP; or
``adapters.memory.sml``). Nothing calls the SML inside a unit of work: a change writes its wish
as a ``LocatorTask`` (``domain.sml``) in the unit of work of the change, and the task is carried
out afterwards, first at once by the request that made it (so that a refusal can be answered),
then by ``LocatorWorker`` with retries. A participant is ``PENDING`` until the SML has it,
then ``ACTIVE``; ``FAILED`` with a ``statusReason`` when the SML refused it for good.

The SMP registers itself first (``REGISTER_SMP``, at start: ``ensure_smp``); participants of an
environment are registered only once its SMP task is done.

This module holds the wishes (``wish_registered``, ``wish_removed``) and the start-up
registration (``ensure_smp``). Carrying a task out is ``application.sml_tasks``; the worker
that retries them, ``application.sml_worker``; preparing a participant's move to another SMP,
``application.sml_migration``. ``LocatorWorker`` and ``prepare_migration`` are also
importable from here.
"""

from __future__ import annotations

import attrs

from fourcorner.application.collections import LOCATOR_TASKS, PARTICIPANTS
from fourcorner.application.context import Context, Network
from fourcorner.application.sealed import SML_MIGRATION_KEY
from fourcorner.application.sml_migration import PreparedMigration, prepare_migration
from fourcorner.application.sml_worker import LocatorWorker
from fourcorner.application.storage import UnitOfWork, again_on_clash
from fourcorner.domain.errors import Conflict, InvalidInput
from fourcorner.domain.network_services import Environment
from fourcorner.domain.participant import Participant, ParticipantStatus
from fourcorner.domain.sml import LocatorOperation, LocatorState, LocatorTask

MAX_GIVEN_KEY = 100


# --- wishes, written in the unit of work of the change ------------------------------------


async def wish_registered(
    ctx: Context, net: Network, uow: UnitOfWork, participant: Participant, migration_key: str | None
) -> Participant:
    """Queue the SML registration of a participant being created (``Migrate`` with
    ``migration_key``, else ``Create``); the participant as it is to be stored: ``PENDING``
    where an SML is configured for its environment."""
    locator = net.locator
    env = participant.environment
    if not locator.serves(env):
        if migration_key is not None:
            raise InvalidInput.one(
                "$.migrationKey",
                f"no SML is configured for {env.value}: there is nothing to migrate from",
            )
        return participant
    if migration_key is not None:
        key = migration_key.strip()
        if not key or len(key) > MAX_GIVEN_KEY or not key.isprintable() or " " in key:
            raise InvalidInput.one(
                "$.migrationKey",
                f"a migration key is 1 to {MAX_GIVEN_KEY} printable characters without spaces",
            )
        migration_key = key
    now = ctx.clock()
    tasks = uow.repository(LOCATOR_TASKS)
    task_id = LocatorTask.id_for(env, participant.identifier_key)
    old = await tasks.lock(task_id)
    if old is not None and old.operation is LocatorOperation.DELETE:
        if old.state is LocatorState.PENDING:
            raise Conflict(
                reason=f"the participant {participant.participant_identifier} is still being "
                f"removed from the {env.value} SML; try again in a minute"
            )
    elif old is not None and old.state is LocatorState.DONE and migration_key is None:
        # the SML has it from us already: nothing to ask
        await tasks.update(attrs.evolve(old, participant_id=participant.id))
        return participant
    operation = LocatorOperation.CREATE if migration_key is None else LocatorOperation.MIGRATE
    sealed = (
        SML_MIGRATION_KEY.seal(net.sealer, task_id, migration_key)
        if migration_key is not None
        else ""
    )
    if old is None:
        task = LocatorTask(
            id=task_id,
            environment=env,
            operation=operation,
            subject=participant.identifier_key,
            created_at=now,
            last_modified_at=now,
            participant_id=participant.id,
            sealed_key=sealed,
            next_attempt_at=now,
        )
        await tasks.add(task)
    else:
        await tasks.update(
            old.replaced(operation, now, participant_id=participant.id, sealed_key=sealed)
        )
    return attrs.evolve(participant, status=ParticipantStatus.PENDING, status_reason=None)


async def wish_removed(
    ctx: Context, net: Network, uow: UnitOfWork, participant: Participant
) -> None:
    """Queue the removal from the SML of a participant being deleted."""
    env = participant.environment
    if not net.locator.serves(env):
        return
    now = ctx.clock()
    tasks = uow.repository(LOCATOR_TASKS)
    task_id = LocatorTask.id_for(env, participant.identifier_key)
    old = await tasks.lock(task_id)
    if old is not None:
        never_sent = old.state is LocatorState.PENDING and old.attempts == 0
        if old.state is LocatorState.FAILED or (never_sent and old.lease_until < now):
            await tasks.remove(old.id)  # the SML never got it from us
            return
        await tasks.update(
            old.replaced(LocatorOperation.DELETE, now, participant_id=None, sealed_key="")
        )
        return
    await tasks.add(
        LocatorTask(
            id=task_id,
            environment=env,
            operation=LocatorOperation.DELETE,
            subject=participant.identifier_key,
            created_at=now,
            last_modified_at=now,
            next_attempt_at=now,
        )
    )


async def ensure_smp(ctx: Context, net: Network, smp_urls: dict[Environment, str]) -> None:
    """At start: for each environment with an SML, queue the registration (or update) of the
    SMP with its URL when the SML does not have it as it is; queue the registration of the
    participants that have no SML task (made before the SML was configured, or the operator's
    own); and give every other participant the status its task says (a change of the
    participant that raced the worker's outcome may have written an older one). Processes
    starting together may race to add the same task: the loser looks again."""
    await again_on_clash(lambda: _ensure_smp(ctx, net, smp_urls))


async def _ensure_smp(ctx: Context, net: Network, smp_urls: dict[Environment, str]) -> None:
    locator = net.locator
    now = ctx.clock()
    async with ctx.uow() as uow:
        tasks = uow.repository(LOCATOR_TASKS)
        for env, url in smp_urls.items():
            if not locator.serves(env):
                continue
            smp_id = locator.smp_id(env)
            task_id = LocatorTask.id_for(env, None)
            old = await tasks.lock(task_id)
            if old is None:
                await tasks.add(
                    LocatorTask(
                        id=task_id,
                        environment=env,
                        operation=LocatorOperation.REGISTER_SMP,
                        subject=smp_id,
                        smp_url=url,
                        created_at=now,
                        last_modified_at=now,
                        next_attempt_at=now,
                    )
                )
            elif (old.subject, old.smp_url) != (smp_id, url) or old.state is LocatorState.FAILED:
                await tasks.update(
                    old.replaced(LocatorOperation.REGISTER_SMP, now, subject=smp_id, smp_url=url)
                )
            await _align_participants(ctx, net, uow, env)
        await uow.commit()


async def _align_participants(
    ctx: Context, net: Network, uow: UnitOfWork, env: Environment
) -> None:
    """Queue the registration of ``env``'s participants that have no SML task, and give the
    others the status their task has (an update may have raced the worker). Those found to
    need it are locked (in id order, as every batch takes them) and read again with their
    task, so that a change committed meanwhile, by a request or by the worker, is kept."""
    participants = uow.repository(PARTICIPANTS)
    tasks = uow.repository(LOCATOR_TASKS)
    found = [
        p.id
        for p in await participants.all(environment=env)
        if _wanted(p, await tasks.get(LocatorTask.id_for(env, p.identifier_key))) is not None
    ]
    for p in await participants.lock_many(found):
        task = await tasks.get(LocatorTask.id_for(p.environment, p.identifier_key))
        wanted = _wanted(p, task)
        if wanted is None:
            continue
        if task is None:
            await wish_registered(ctx, net, uow, p, None)
        if (p.status, p.status_reason) != wanted:
            status, reason = wanted
            await participants.update(attrs.evolve(p, status=status, status_reason=reason))


def _wanted(
    p: Participant, task: LocatorTask | None
) -> tuple[ParticipantStatus, str | None] | None:
    """The status and reason ``p`` is to be given, its SML task being ``task``; None when it
    has them already, or is being removed. With no task, ``p`` is to be registered: pending."""
    if task is None:
        return ParticipantStatus.PENDING, None
    if task.operation is LocatorOperation.DELETE:
        return None
    wanted = _STATUS_OF[task.state], task.last_error or None
    return None if (p.status, p.status_reason) == wanted else wanted


_STATUS_OF = {
    LocatorState.PENDING: ParticipantStatus.PENDING,
    LocatorState.DONE: ParticipantStatus.ACTIVE,
    LocatorState.FAILED: ParticipantStatus.FAILED,
}


# the worker and the migration away, under the names their importers know
__all__ = [
    "MAX_GIVEN_KEY",
    "LocatorWorker",
    "PreparedMigration",
    "ensure_smp",
    "prepare_migration",
    "wish_registered",
    "wish_removed",
]
