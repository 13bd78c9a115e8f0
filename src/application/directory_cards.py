"""Keeping the directory's copy of a business card current.

The directory indexes what the participant's SMP serves as its business card
(``publishing.business_card``: the participant's card fields, else the organisation's legal
name, country and website, else the participant's name). A change that alters that card, made
to a participant the directory was asked to index (``request-pd-publish``), marks its
publication ``OUTDATED`` in the unit of work of the change, and, once that is committed,
the directory of the participant's environment is asked to index it again, exactly as
``request-pd-publish`` asks it the first time (``DirectoryPublisher.publish``). Done, it is
``PUBLISHED`` again; should that directory not answer, it stays ``OUTDATED`` with what the
directory said (``reason``), and ``request-pd-publish`` asks again, as it does for a first
publication that failed. A change that leaves the card as it was asks nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import attrs

from fourcorner.application.collections import PARTICIPANTS
from fourcorner.application.context import Context, Network
from fourcorner.domain.errors import ServiceUnavailable
from fourcorner.domain.participant import Participant, PublicationState

log = logging.getLogger("fourcorner.directory")


def after_change(ctx: Context, participant: Participant, card_changed: bool) -> Participant:
    """``participant`` with its publication outdated when the card it serves changed and the
    directory was asked to index it before; as it is otherwise."""
    if not card_changed or not participant.directory.in_directory:
        return participant
    return attrs.evolve(participant, directory=participant.directory.card_changed(ctx.clock()))


async def reindex(ctx: Context, net: Network, participants: Iterable[Participant]) -> None:
    """Ask the directory of each ``OUTDATED`` participant's environment to index its card
    again (outside any unit of work), and record the outcome. A participant changed again
    meanwhile (a newer ``changed_at``) is left to the request that changed it."""
    for p in participants:
        if p.directory.state is not PublicationState.OUTDATED:
            continue
        try:
            await net.directory.publish(p.environment, p.identifier_key)
            reason = None
        except ServiceUnavailable as e:
            reason = e.reason
        async with ctx.uow() as uow:
            current = await uow.repository(PARTICIPANTS).lock(p.id)
            if current is None or current.directory != p.directory:
                continue
            directory = (
                current.directory.reindexed(ctx.clock())
                if reason is None
                else current.directory.not_reindexed(reason)
            )
            await uow.repository(PARTICIPANTS).update(attrs.evolve(current, directory=directory))
            await uow.commit()
        log.log(
            logging.INFO if reason is None else logging.WARNING,
            "business card %s",
            "indexed again" if reason is None else "not indexed again",
            extra={
                "event": "directory.reindex",
                "environment": p.environment.value,
                "participant": p.identifier_key,
                "error": reason or "",
            },
        )


async def reindexed(ctx: Context, net: Network, participant: Participant) -> Participant:
    """``reindex`` of one participant: the participant as it is after."""
    if participant.directory.state is not PublicationState.OUTDATED:
        return participant
    await reindex(ctx, net, (participant,))
    async with ctx.uow() as uow:
        return await uow.repository(PARTICIPANTS).get(participant.id) or participant
