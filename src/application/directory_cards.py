"""Keeping the directory's copy of a business card current.

The directory indexes what the participant's SMP serves as its business card
(``publishing.business_card``: the participant's card fields, else the organisation's legal
name, country and website, else the participant's name). A change that alters that card, made
to a participant the directory was asked to index (``request-pd-publish``), marks its
publication ``OUTDATED`` in the unit of work of the change, and, once that is committed,
the directory of the participant's environment is asked to index it again, exactly as
``request-pd-publish`` asks it the first time (``DirectoryPublisher.publish``). Done, it is
``PUBLISHED`` again; should that directory not answer, it stays ``OUTDATED`` with what the
directory said (``reason``), and the workers ask again (``application.directory_worker``),
after each of ``Network.directory_delays`` in turn and then after the last one, until it
answers or ``Network.directory_attempts`` attempts since the change went unanswered: then
the workers stop, the reason says so and an error is logged (``directory.reindex`` with
``final``), as the SML's refusals are (``sml.task``); the card's next change or
``request-pd-publish`` asks again. ``request-pd-publish`` asks at once. A change that leaves
the card as it was asks nothing.

Whoever asks records the answer only when nothing of the publication changed meanwhile
(``Participant.same_publication``): a newer change of the card, another worker's claim, or an
answer recorded by someone else wins over it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence

from fourcorner.application.collections import PARTICIPANTS
from fourcorner.application.context import Context, Network
from fourcorner.application.repositories import Participants
from fourcorner.domain.errors import ServiceUnavailable
from fourcorner.domain.participant import Participant, PublicationState

log = logging.getLogger("fourcorner.directory")

REINDEX_AT_ONCE = 10  # the directory asked for this many cards at once after a change


def after_change(
    ctx: Context, net: Network, participant: Participant, card_changed: bool
) -> Participant:
    """``participant`` with its publication outdated when the card it serves changed and the
    directory was asked to index it before; as it is otherwise. The change asks the directory
    itself (``reindex``); the workers ask once the first of the delays has passed without an
    answer recorded (the change's process may have ended before it asked)."""
    if not card_changed:
        return participant
    return participant.card_changed(ctx.clock(), net.directory_delays[0])


async def ask(
    ctx: Context, net: Network, p: Participant, limit: float | None = None
) -> Participant | None:
    """Ask the directory of ``p``'s environment (outside any unit of work) to index its card,
    waiting ``limit`` seconds at most (besides the directory adapter's own time limit), and
    record the answer unless the publication changed since ``p`` was read: the participant as
    recorded, or None when nothing was. A participant deleted meanwhile has its card
    withdrawn again (``withdraw_left``)."""
    try:
        await asyncio.wait_for(net.directory.publish(p.environment, p.identifier_key), limit)
        reason = None
    except ServiceUnavailable as e:
        reason = e.reason
    except TimeoutError:
        reason = "the directory did not answer in time"
    async with ctx.uow() as uow:
        current = await uow.repository(PARTICIPANTS).lock(p.id)
        if current is not None and current.same_publication(p):
            answered = current.directory_asked(
                ctx.clock(), reason, net.directory_delays, net.directory_attempts
            )
            await uow.repository(PARTICIPANTS).update(answered)
            await uow.commit()
    if current is None:  # deleted meanwhile
        await withdraw_left(ctx, net, [p], limit)
    if current is None or not current.same_publication(p):
        return None
    final = answered.directory_retry.given_up
    if reason is None:
        level, said = logging.INFO, "indexed again"
    elif final:
        level, said = logging.ERROR, "not indexed again, and no more asked for"
    else:
        level, said = logging.WARNING, "not indexed again"
    log.log(
        level,
        "business card %s",
        said,
        extra={
            "event": "directory.reindex",
            "environment": p.environment.value,
            "participant": p.identifier_key,
            "attempts": answered.directory_retry.attempts,
            "error": reason or "",
            "final": final,
        },
    )
    return answered


async def withdraw_left(
    ctx: Context, net: Network, gone: Sequence[Participant], limit: float | None = None
) -> None:
    """Withdraw the cards of participants ``gone`` (deleted while the directory was being
    asked to index them), each from its environment's directory, waiting ``limit`` seconds at
    most for each. Their deletion withdrew each card it knew of before it committed, but an
    index asked for meanwhile can come after that: taken back here, after the deletion is
    seen. A card of the same identifier that a participant made since has asked for is
    kept, and indexed again should it have asked between that check and the withdrawal
    (``_after_withdrawal``). A directory that does not answer keeps the card: an error is
    logged."""
    if not gone:
        return
    async with ctx.uow() as uow:
        participants = Participants(uow)
        left = []
        for p in gone:
            made_since = await participants.by_identifier(p.identifier_key, p.environment)
            if made_since is None or not made_since.directory.in_directory:
                left.append(p)
    withdrawn = []
    for p in left:
        try:
            await asyncio.wait_for(net.directory.withdraw(p.environment, p.identifier_key), limit)
            withdrawn.append(p)
            continue
        except ServiceUnavailable as e:
            reason = e.reason
        except TimeoutError:
            reason = "the directory did not answer in time"
        log.error(
            "business card of a deleted participant left in the directory",
            extra={
                "event": "directory.withdraw",
                "environment": p.environment.value,
                "participant": p.identifier_key,
                "error": reason,
            },
        )
    await _after_withdrawal(ctx, net, withdrawn)


async def _after_withdrawal(ctx: Context, net: Network, withdrawn: Sequence[Participant]) -> None:
    """The participants of the identifiers whose cards were ``withdrawn``, made since the
    deleted ones: one may have asked the directory to index its card after the check before
    the withdrawal, which then took its card away. Each is marked
    (``Participant.card_withdrawn``), with the lock its other writers take: a card of its own
    in the directory is indexed again at once (``reindex``; the workers ask again should
    that go unanswered), and a request to index it whose answer is not recorded yet has it
    asked for again (``participants.request_publication``)."""
    if not withdrawn:
        return
    async with ctx.uow() as uow:
        participants, repository = Participants(uow), uow.repository(PARTICIPANTS)
        since = [
            await participants.by_identifier(p.identifier_key, p.environment) for p in withdrawn
        ]
        # held in id order, as a batch's other writers hold them: none deadlocks with this
        held = await repository.lock_many([p.id for p in since if p is not None])
        now = ctx.clock()
        marked = [current.card_withdrawn(now, net.directory_delays[0]) for current in held]
        await repository.update_many(marked, before=held)
        await uow.commit()
    await reindex(ctx, net, marked)


async def reindex(ctx: Context, net: Network, participants: Iterable[Participant]) -> None:
    """Ask the directory of each ``OUTDATED`` participant's environment to index its card
    again, and record the outcome. A participant changed again meanwhile is left to the
    request that changed it, one claimed by a worker to that worker. A few at once
    (``REINDEX_AT_ONCE``): a change of an organisation's card fields waits about one call's
    time limit for a directory that does not answer, not one per participant."""
    gate = asyncio.Semaphore(REINDEX_AT_ONCE)

    async def one(p: Participant) -> None:
        async with gate:
            await ask(ctx, net, p)

    await asyncio.gather(
        *(one(p) for p in participants if p.directory.state is PublicationState.OUTDATED)
    )


async def reindexed(ctx: Context, net: Network, participant: Participant) -> Participant:
    """``reindex`` of one participant: the participant as it is after (read again only when
    its publication changed meanwhile, and the answer was not recorded)."""
    if participant.directory.state is not PublicationState.OUTDATED:
        return participant
    recorded = await ask(ctx, net, participant)
    if recorded is not None:
        return recorded
    async with ctx.uow() as uow:
        return await uow.repository(PARTICIPANTS).get(participant.id) or participant
