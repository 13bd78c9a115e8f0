"""The worker that asks the directory again for business cards left ``OUTDATED`` in it
(``application.directory_cards``): a change's own asking found the directory of the
participant's environment not answering, or its process ended before it asked.

Each round claims the participants whose publication is due (``Participant.directory_due``,
an indexed column) in one unit of work, moving each one's due time on by the lease, so that
no other worker, of this process or another, asks for it meanwhile (PostgreSQL: ``FOR UPDATE
SKIP LOCKED``; SQLite and memory units of work never overlap). The directory is asked outside
any unit of work, for ``lease / 2`` at most besides the indexer's own time limit, and the
answer recorded only when nothing of the publication changed since the claim: a newer change
of the card, or a claim taken over after a lease ran out, wins. Unanswered, the card is due
again after the next of ``Network.directory_delays`` (the last one repeated), until
``Network.directory_attempts`` went unanswered: then it is due no more.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta

from fourcorner.application.collections import PARTICIPANTS
from fourcorner.application.context import Context, Network
from fourcorner.application.directory_cards import ask
from fourcorner.application.idle import idle
from fourcorner.application.listing import condition
from fourcorner.application.storage import Order, Query
from fourcorner.domain.filtering import Op
from fourcorner.domain.participant import Participant, PublicationState

log = logging.getLogger("fourcorner.directory")


def due(now: datetime, limit: int) -> Query:
    """The participants whose card is due to be asked for again by ``now``, the longest due
    first: read through the partial index of ``directoryDueAt`` (its column is NULL unless
    the publication is ``OUTDATED``)."""
    return Query(
        where=(condition(PARTICIPANTS, "directoryDueAt", Op.LTE, now),),
        order=Order("directoryDueAt"),
        limit=limit,
    )


class DirectoryWorker:
    """Asks the directory again for due ``OUTDATED`` business cards until stopped: up to
    ``batch`` at once, every ``poll_interval`` seconds (at once again after a full batch)."""

    def __init__(
        self,
        ctx: Context,
        net: Network,
        *,
        lease: timedelta = timedelta(seconds=60),
        poll_interval: float = 5.0,
        batch: int = 10,
    ) -> None:
        self._ctx, self._net = ctx, net
        self._lease = lease
        self._poll = poll_interval
        self._batch = batch

    async def claim(self) -> list[Participant]:
        """The participants whose card is due to be asked for, claimed for one lease."""
        now = self._ctx.clock()
        async with self._ctx.uow() as uow:
            store = uow.repository(PARTICIPANTS)
            claimed = [
                p.directory_claimed(now + self._lease)
                for p in await store.claim(due(now, self._batch))
                if p.directory.state is PublicationState.OUTDATED
            ]
            if claimed:
                await store.update_many(claimed)
            await uow.commit()
        return claimed

    async def _one(self, p: Participant) -> None:
        try:
            await ask(self._ctx, self._net, p, self._lease.total_seconds() / 2)
        except Exception:
            log.exception(
                "asking the directory again failed unexpectedly",
                extra={"participant": p.identifier_key},
            )

    async def run_once(self) -> int:
        """Ask for the cards due now, all at once (so that each answer is in before half the
        lease has passed); how many were claimed."""
        claimed = await self.claim()
        await asyncio.gather(*(self._one(p) for p in claimed))
        return len(claimed)

    async def run(self, stop: asyncio.Event) -> None:
        """Rounds until ``stop`` is set; a round in flight ends first (each call is bounded)."""
        while not stop.is_set():
            try:
                count = await self.run_once()
            except Exception:
                log.exception("the directory worker failed")
                count = 0
            if count >= self._batch:
                continue
            await idle(stop, self._poll)
