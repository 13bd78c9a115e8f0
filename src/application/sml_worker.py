"""The worker that carries out the due SML tasks of the outbox (``application.sml``), with retries.

Each task is claimed (leased) before it is carried out (``application.sml_tasks``), so several
workers may run. The SMPs' tasks come first; a participant's task runs once the SMP of its
environment is registered.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from datetime import timedelta

from fourcorner.application.collections import LOCATOR_TASKS
from fourcorner.application.context import Context, Network
from fourcorner.application.idle import idle
from fourcorner.application.listing import condition, equals, one_of
from fourcorner.application.sml_tasks import attempt, smp_registered
from fourcorner.application.storage import Query
from fourcorner.domain.filtering import Op
from fourcorner.domain.network_services import Environment
from fourcorner.domain.sml import LocatorOperation, LocatorState

log = logging.getLogger("fourcorner.sml")


LEASE = timedelta(seconds=120)
"""How long a worker's claim on an SML task holds, at least (``entrypoints.lease_checks``
lengthens it where the SML's timeout needs more)."""


class LocatorWorker:
    """Carries out due SML tasks until stopped: the SMPs' first, then the participants' of the
    environments whose SMP is registered. Several workers may run: each task is claimed (leased)
    before it is carried out."""

    def __init__(
        self,
        ctx: Context,
        net: Network,
        *,
        lease: timedelta = LEASE,
        poll_interval: float = 5.0,
        batch: int = 20,
        concurrency: int = 4,
    ) -> None:
        self._ctx, self._net = ctx, net
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
            ready = [e for e in Environment if await smp_registered(uow, e)]
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
                await attempt(self._ctx, self._net, task_id, self._lease)
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
            await idle(stop, self._poll, self._wake)
