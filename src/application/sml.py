"""Registering our SMP and its participants in the network's SML, through an outbox.

The port ``ServiceLocator`` is the SML's management interface (``adapters.sml``: SOAP; or
``adapters.memory.sml``). Nothing calls the SML inside a unit of work: a change writes its wish
as a ``LocatorTask`` (``domain.sml``) in the unit of work of the change, and the task is carried
out afterwards, first at once by the request that made it (so that a refusal can be answered),
then by ``LocatorWorker`` with retries. A participant is ``PENDING`` until the SML has it,
then ``ACTIVE``; ``FAILED`` with a ``statusReason`` when the SML refused it for good.

The SMP registers itself first (``REGISTER_SMP``, at start: ``ensure_smp``); participants of an
environment are registered only once its SMP task is done.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import uuid
from datetime import timedelta

import attrs

from fourcorner.application.access import Principal, authorise
from fourcorner.application.collections import LOCATOR_TASKS, PARTICIPANTS
from fourcorner.application.context import Context
from fourcorner.application.listing import condition, equals, one_of
from fourcorner.application.locator import LocatorError, LocatorFault
from fourcorner.application.scoped import owned
from fourcorner.application.storage import Query, UnitOfWork
from fourcorner.domain.errors import (
    Conflict,
    InvalidInput,
    LocatorRefused,
    LocatorUnavailable,
    RegisteredElsewhere,
)
from fourcorner.domain.filtering import Op
from fourcorner.domain.network_services import Environment
from fourcorner.domain.participant import Participant, ParticipantStatus
from fourcorner.domain.roles import Role
from fourcorner.domain.sml import (
    LocatorOperation,
    LocatorState,
    LocatorTask,
    new_migration_key,
)

log = logging.getLogger("fourcorner.sml")

MAX_GIVEN_KEY = 100


def _key_context(task_id: uuid.UUID) -> bytes:
    return f"{LOCATOR_TASKS.name}/{task_id}/sealed_key".encode()


# --- wishes, written in the unit of work of the change ------------------------------------


async def wish_registered(
    ctx: Context, uow: UnitOfWork, participant: Participant, migration_key: str | None
) -> Participant:
    """Queue the SML registration of a participant being created (``Migrate`` with
    ``migration_key``, else ``Create``); the participant as it is to be stored: ``PENDING``
    where an SML is configured for its environment."""
    locator = ctx.net.locator
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
        ctx.net.sealer.seal(migration_key.encode(), context=_key_context(task_id))
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


async def wish_removed(ctx: Context, uow: UnitOfWork, participant: Participant) -> None:
    """Queue the removal from the SML of a participant being deleted."""
    env = participant.environment
    if not ctx.net.locator.serves(env):
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


async def ensure_smp(ctx: Context, smp_urls: dict[Environment, str]) -> None:
    """At start: for each environment with an SML, queue the registration (or update) of the
    SMP with its URL when the SML does not have it as it is; queue the registration of the
    participants that have no SML task (made before the SML was configured, or the operator's
    own); and give every other participant the status its task says (a change of the
    participant that raced the worker's outcome may have written an older one). Processes
    starting together may race to add the same task: the loser looks again."""
    for last in (False, False, True):
        try:
            await _ensure_smp(ctx, smp_urls)
            return
        except Conflict:
            if last:
                raise


async def _ensure_smp(ctx: Context, smp_urls: dict[Environment, str]) -> None:
    locator = ctx.net.locator
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
            participants = uow.repository(PARTICIPANTS)
            for p in await participants.all(environment=env):
                task = await tasks.get(LocatorTask.id_for(env, p.identifier_key))
                if task is None:
                    await wish_registered(ctx, uow, p, None)
                    status, reason = ParticipantStatus.PENDING, None
                elif task.operation is LocatorOperation.DELETE:
                    continue
                else:  # the status as the task has it (an update may have raced the worker)
                    status, reason = _STATUS_OF[task.state], task.last_error or None
                if (p.status, p.status_reason) != (status, reason):
                    await participants.update(attrs.evolve(p, status=status, status_reason=reason))
        await uow.commit()


_STATUS_OF = {
    LocatorState.PENDING: ParticipantStatus.PENDING,
    LocatorState.DONE: ParticipantStatus.ACTIVE,
    LocatorState.FAILED: ParticipantStatus.FAILED,
}


# --- carrying a task out -------------------------------------------------------------------


@attrs.frozen
class Outcome:
    """How an attempt ended: ``done``, or failed (``error``) for good or for now."""

    done: bool
    error: str = ""
    permanent: bool = False
    refusal: Exception | None = None  # what a request answers for a permanent failure


async def _ready(uow: UnitOfWork, env: Environment) -> bool:
    smp = await uow.repository(LOCATOR_TASKS).get(LocatorTask.id_for(env, None))
    return smp is not None and smp.state is LocatorState.DONE


async def _claim(ctx: Context, task_id: uuid.UUID, lease: timedelta) -> LocatorTask | None:
    now = ctx.clock()
    async with ctx.uow() as uow:
        tasks = uow.repository(LOCATOR_TASKS)
        task = await tasks.lock(task_id)
        if (
            task is None
            or task.state is not LocatorState.PENDING
            or task.lease_until >= now
            or task.next_attempt_at > now
        ):
            return None
        if task.is_participant and not await _ready(uow, task.environment):
            return None
        claimed = task.claimed(now, lease)
        await tasks.update(claimed)
        await uow.commit()
    return claimed


def _open_key(ctx: Context, task: LocatorTask) -> str:
    return ctx.net.sealer.open(task.sealed_key, context=_key_context(task.id)).decode()


async def _perform(ctx: Context, task: LocatorTask) -> Outcome:
    locator = ctx.net.locator
    env, subject = task.environment, task.subject
    try:
        if task.operation is LocatorOperation.REGISTER_SMP:
            await locator.register_smp(env, task.smp_url)
        elif task.operation is LocatorOperation.CREATE:
            await locator.create(env, subject)
        elif task.operation is LocatorOperation.MIGRATE:
            try:
                key = _open_key(ctx, task)
            except ValueError as e:
                return Outcome(False, f"the migration key cannot be opened: {e}", True)
            await locator.migrate(env, subject, key)
        else:
            await locator.delete(env, subject)
    except LocatorError as e:
        return await _judge(ctx, task, e)
    return Outcome(True)


async def _judge(ctx: Context, task: LocatorTask, error: LocatorError) -> Outcome:
    """The outcome of a refusal: retry, done after all, or failed for good."""
    env, subject = task.environment, task.subject
    said = f"the {env.value} SML answered: {error.reason}"
    if error.transient:
        return Outcome(False, said)
    if task.operation is LocatorOperation.DELETE and error.fault in (
        LocatorFault.NOT_FOUND,
        LocatorFault.UNAUTHORIZED,
    ):
        return Outcome(True)  # it is not (or no longer) ours there: what was wished
    if task.is_participant and task.attempts > 1:
        # an earlier attempt may have been carried out without our hearing of it
        try:
            if await ctx.net.locator.registered(env, subject):
                return Outcome(True)
        except LocatorError as e:
            if e.transient:
                return Outcome(False, f"the {env.value} SML answered: {e.reason}")
    refusal: Exception
    if task.operation is LocatorOperation.CREATE and error.fault is LocatorFault.ALREADY_REGISTERED:
        refusal = RegisteredElsewhere(
            participant=subject, environment=env.value, detail=error.reason
        )
        said = (
            f"registered in the {env.value} SML by another SMP ({error.reason}); to move it "
            "here, delete this participant and create it again with a migration key from its "
            "current SMP"
        )
    elif task.operation is LocatorOperation.MIGRATE:
        refusal = LocatorRefused(reason=f"the migration key was not accepted ({error.reason})")
    else:
        refusal = LocatorRefused(reason=error.reason)
    return Outcome(False, said, True, refusal)


async def _record(ctx: Context, claimed: LocatorTask, outcome: Outcome) -> None:
    now = ctx.clock()
    async with ctx.uow() as uow:
        tasks = uow.repository(LOCATOR_TASKS)
        task = await tasks.lock(claimed.id)
        if task is None or task.generation != claimed.generation:
            return  # a newer wish replaced it; that one runs next
        participant = None
        if task.participant_id is not None and task.operation is not LocatorOperation.DELETE:
            participant = await uow.repository(PARTICIPANTS).lock(task.participant_id)
        if outcome.done:
            if task.operation is LocatorOperation.DELETE:
                await tasks.remove(task.id)
            else:
                await tasks.update(task.done(now))
            status, reason = ParticipantStatus.ACTIVE, None
        elif outcome.permanent:
            await tasks.update(task.failed(now, outcome.error))
            status, reason = ParticipantStatus.FAILED, outcome.error
        else:
            await tasks.update(task.retried(now, outcome.error))
            status, reason = ParticipantStatus.PENDING, outcome.error
        if participant is not None and participant.identifier_key == task.subject:
            await uow.repository(PARTICIPANTS).update(
                attrs.evolve(participant, status=status, status_reason=reason)
            )
        await uow.commit()
    level = logging.INFO if outcome.done else logging.WARNING
    log.log(
        level,
        "SML task %s",
        "done" if outcome.done else ("failed" if outcome.permanent else "to be retried"),
        extra={
            "event": "sml.task",
            "operation": claimed.operation.value,
            "environment": claimed.environment.value,
            "subject": claimed.subject,
            "attempts": claimed.attempts,
            "error": outcome.error,
        },
    )


async def attempt(ctx: Context, task_id: uuid.UUID, lease: timedelta) -> Outcome | None:
    """Carry out the task now when it is due and free; None when it is not."""
    claimed = await _claim(ctx, task_id, lease)
    if claimed is None:
        return None
    outcome = await _perform(ctx, claimed)
    await _record(ctx, claimed, outcome)
    return outcome


FIRST_LEASE = timedelta(seconds=60)
FIRST_WAIT = 15.0  # seconds a request waits for the SML before it answers PENDING


async def register_now(ctx: Context, participant: Participant) -> Participant:
    """The first attempt of a participant's registration, by the request that created it: the
    participant as it is now (``ACTIVE`` when the SML took it, ``PENDING`` when it is to be
    retried). A refusal for good undoes the creation (the participant and its SMP entry) and
    raises ``RegisteredElsewhere`` or ``LocatorRefused``."""
    if participant.status is not ParticipantStatus.PENDING:
        return participant
    task_id = LocatorTask.id_for(participant.environment, participant.identifier_key)
    try:
        outcome = await asyncio.wait_for(attempt(ctx, task_id, FIRST_LEASE), FIRST_WAIT)
    except TimeoutError:
        outcome = None  # the SML is slow: the workers carry on once the lease has run out
    if outcome is not None and outcome.permanent and outcome.refusal is not None:
        async with ctx.uow() as uow:
            current = await uow.repository(PARTICIPANTS).lock(participant.id)
            task = await uow.repository(LOCATOR_TASKS).lock(task_id)
            if current is not None and current.status is ParticipantStatus.FAILED:
                await uow.repository(PARTICIPANTS).remove(current.id)
                await ctx.net.smp.unpublish(uow, current.smp_ref, current.identifier_key)
                if task is not None and task.state is LocatorState.FAILED:
                    await uow.repository(LOCATOR_TASKS).remove(task.id)
                await uow.commit()
                raise outcome.refusal
    if outcome is None:
        await _say_why_waiting(ctx, participant)
    async with ctx.uow() as uow:
        return await uow.repository(PARTICIPANTS).get(participant.id) or participant


async def _say_why_waiting(ctx: Context, participant: Participant) -> None:
    """A participant that waits for its SMP's own registration says so (with what the SML
    answered the SMP, when it did)."""
    env = participant.environment
    async with ctx.uow() as uow:
        smp = await uow.repository(LOCATOR_TASKS).get(LocatorTask.id_for(env, None))
        if smp is not None and smp.state is LocatorState.DONE:
            return
        current = await uow.repository(PARTICIPANTS).lock(participant.id)
        if current is None or current.status is not ParticipantStatus.PENDING:
            return
        said = f": {smp.last_error}" if smp is not None and smp.last_error else ""
        reason = f"waiting for our SMP's own registration in the {env.value} SML{said}"
        await uow.repository(PARTICIPANTS).update(attrs.evolve(current, status_reason=reason))
        await uow.commit()


# --- migration away ------------------------------------------------------------------------


@attrs.frozen
class PreparedMigration:
    participant_id: uuid.UUID
    participant_identifier: str
    environment: Environment
    migration_key: str


async def prepare_migration(
    ctx: Context, principal: Principal, org_id: uuid.UUID, pid: uuid.UUID
) -> PreparedMigration:
    """Prepare the move of a participant to another SMP (``PrepareToMigrate``): the key, made
    here, is given to the new SMP's provider, who completes the move with it. It is answered
    this once and not kept. The participant stays served here until the move completes."""
    async with ctx.uow() as uow:
        await authorise(uow, principal, org_id, Role.ORGADMIN)
        p: Participant = await owned(uow, PARTICIPANTS, org_id, pid, "participant")
    env = p.environment
    if not ctx.net.locator.serves(env):
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
        await ctx.net.locator.prepare_migration(env, p.identifier_key, key)
    except LocatorError as e:
        if e.transient:
            raise LocatorUnavailable(reason=e.reason) from None
        raise LocatorRefused(reason=e.reason) from None
    log.info(
        "SML migration prepared",
        extra={"event": "sml.migration_prepared", "participant": p.identifier_key},
    )
    return PreparedMigration(p.id, p.participant_identifier, env, key)


# --- the worker ----------------------------------------------------------------------------


class LocatorWorker:
    """Carries out due SML tasks until stopped: the SMPs' first, then the participants' of the
    environments whose SMP is registered. Several workers may run: each task is claimed (leased)
    before it is carried out."""

    def __init__(
        self,
        ctx: Context,
        *,
        lease: timedelta = timedelta(seconds=120),
        poll_interval: float = 5.0,
        batch: int = 20,
        concurrency: int = 4,
    ) -> None:
        self._ctx = ctx
        self._lease = lease
        self._poll = poll_interval
        self._batch = batch
        self._gate = asyncio.Semaphore(concurrency)
        self._wake = asyncio.Event()

    def wake(self) -> None:
        self._wake.set()

    async def due(self) -> list[uuid.UUID]:
        """The ids of tasks due now that can run (SMP tasks first)."""
        now = self._ctx.clock()
        due = (
            equals(LOCATOR_TASKS, "state", LocatorState.PENDING),
            condition(LOCATOR_TASKS, "nextAttemptAt", Op.LTE, now),
            condition(LOCATOR_TASKS, "leaseUntil", Op.LT, now),
        )
        async with self._ctx.uow() as uow:
            tasks = uow.repository(LOCATOR_TASKS)
            smp = equals(LOCATOR_TASKS, "operation", LocatorOperation.REGISTER_SMP)
            found = (await tasks.list(Query(where=(*due, smp), limit=self._batch))).items
            ready = [e for e in Environment if await _ready(uow, e)]
            if ready:
                operations = [o for o in LocatorOperation if o is not LocatorOperation.REGISTER_SMP]
                more = Query(
                    where=(
                        *due,
                        one_of(LOCATOR_TASKS, "environment", ready),
                        one_of(LOCATOR_TASKS, "operation", operations),
                    ),
                    limit=self._batch,
                )
                found += (await tasks.list(more)).items
        return [t.id for t in found]

    async def _one(self, task_id: uuid.UUID) -> None:
        async with self._gate:
            try:
                await attempt(self._ctx, task_id, self._lease)
            except Exception:
                log.exception("an SML task failed unexpectedly", extra={"task": str(task_id)})

    async def run_once(self) -> int:
        """Carry out the tasks due now; how many were looked at."""
        ids = await self.due()
        await asyncio.gather(*(self._one(i) for i in ids))
        return len(ids)

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                count = await self.run_once()
            except Exception:
                log.exception("the SML worker failed")
                count = 0
            if count >= self._batch:
                continue
            self._wake.clear()
            waiters = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(self._wake.wait())]
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED), self._poll
                )
            for w in waiters:
                w.cancel()
