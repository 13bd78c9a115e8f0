"""Carrying out an SML task of the outbox (``application.sml``): one attempt, and its outcome.

An attempt claims (leases) a due task in one unit of work, calls the SML outside any, and
records what came of it in another: the task done, retried later or failed for good, and the
participant's status (``ACTIVE``, ``PENDING`` or ``FAILED`` with a ``statusReason``) with it.
A refusal is judged here: a transient one is retried; a removal the SML does not know of is
done; a registration an earlier attempt may have made unheard is asked after.

``register_now`` is the first attempt, made by the request that created the participant, so
that a refusal for good can be answered (and the creation undone). Later attempts are the
worker's (``application.sml_worker``).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from datetime import timedelta

import attrs

from fourcorner.application.collections import LOCATOR_TASKS, PARTICIPANTS
from fourcorner.application.context import Context, Network
from fourcorner.application.locator import LocatorError, LocatorFault
from fourcorner.application.sealed import SML_MIGRATION_KEY
from fourcorner.application.storage import UnitOfWork
from fourcorner.domain.errors import LocatorRefused, RegisteredElsewhere
from fourcorner.domain.network_services import Environment
from fourcorner.domain.participant import Participant, ParticipantStatus
from fourcorner.domain.sml import LocatorOperation, LocatorState, LocatorTask

log = logging.getLogger("fourcorner.sml")


@attrs.frozen
class Outcome:
    """How an attempt ended: ``done``, or failed (``error``) for good or for now."""

    done: bool
    error: str = ""
    permanent: bool = False
    refusal: Exception | None = None  # what a request answers for a permanent failure


async def smp_registered(uow: UnitOfWork, env: Environment) -> bool:
    """Whether our SMP's own registration in the environment's SML is done."""
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
        if task.is_participant and not await smp_registered(uow, task.environment):
            return None
        claimed = task.claimed(now, lease)
        await tasks.update(claimed)
        await uow.commit()
    return claimed


def _open_key(ctx: Context, net: Network, task: LocatorTask) -> str:
    return net.sealer.open(task.sealed_key, context=SML_MIGRATION_KEY.context(task.id)).decode()


async def _perform(ctx: Context, net: Network, task: LocatorTask) -> Outcome:
    locator = net.locator
    env, subject = task.environment, task.subject
    try:
        if task.operation is LocatorOperation.REGISTER_SMP:
            await locator.register_smp(env, task.smp_url)
        elif task.operation is LocatorOperation.CREATE:
            await locator.create(env, subject)
        elif task.operation is LocatorOperation.MIGRATE:
            try:
                key = _open_key(ctx, net, task)
            except ValueError as e:
                return Outcome(False, f"the migration key cannot be opened: {e}", True)
            await locator.migrate(env, subject, key)
        else:
            await locator.delete(env, subject)
    except LocatorError as e:
        return await _judge(ctx, net, task, e)
    return Outcome(True)


async def _judge(ctx: Context, net: Network, task: LocatorTask, error: LocatorError) -> Outcome:
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
            if await net.locator.registered(env, subject):
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
        tasks, participants = uow.repository(LOCATOR_TASKS), uow.repository(PARTICIPANTS)
        # the participant held before its task, as its deletion (and ``register_now``) takes
        # them: taken the other way round, the two deadlock
        participant = None
        if claimed.participant_id is not None and claimed.operation is not LocatorOperation.DELETE:
            participant = await participants.lock(claimed.participant_id)
        task = await tasks.lock(claimed.id)
        if task is None or task.generation != claimed.generation:
            return  # a newer wish replaced it; that one runs next
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
        if (
            participant is not None
            and participant.id == task.participant_id  # still the task's (read before it)
            and participant.identifier_key == task.subject
        ):
            await participants.update(
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


async def attempt(
    ctx: Context, net: Network, task_id: uuid.UUID, lease: timedelta
) -> Outcome | None:
    """Carry out the task now when it is due and free; None when it is not."""
    claimed = await _claim(ctx, task_id, lease)
    if claimed is None:
        return None
    outcome = await _perform(ctx, net, claimed)
    await _record(ctx, claimed, outcome)
    return outcome


FIRST_LEASE = timedelta(seconds=60)
FIRST_WAIT = 15.0  # seconds a request waits for the SML before it answers PENDING


async def register_now(ctx: Context, net: Network, participant: Participant) -> Participant:
    """The first attempt of a participant's registration, by the request that created it: the
    participant as it is now (``ACTIVE`` when the SML took it, ``PENDING`` when it is to be
    retried). A refusal for good undoes the creation (the participant and its SMP entry) and
    raises ``RegisteredElsewhere`` or ``LocatorRefused``."""
    if participant.status is not ParticipantStatus.PENDING:
        return participant
    task_id = LocatorTask.id_for(participant.environment, participant.identifier_key)
    try:
        outcome = await asyncio.wait_for(attempt(ctx, net, task_id, FIRST_LEASE), FIRST_WAIT)
    except TimeoutError:
        outcome = None  # the SML is slow: the workers carry on once the lease has run out
    if outcome is not None and outcome.permanent and outcome.refusal is not None:
        async with ctx.uow() as uow:
            current = await uow.repository(PARTICIPANTS).lock(participant.id)
            task = await uow.repository(LOCATOR_TASKS).lock(task_id)
            if current is not None and current.status is ParticipantStatus.FAILED:
                await uow.repository(PARTICIPANTS).remove(current.id)
                await net.smp.unpublish(uow, current.smp_ref, current.identifier_key)
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
