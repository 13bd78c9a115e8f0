"""The webhook delivery worker: claims due deliveries from the outbox and sends them.

Any number of workers in any number of processes share the outbox: a claim sets a lease in
the same unit of work that selected the rows (``FOR UPDATE SKIP LOCKED`` on PostgreSQL), and a
crashed worker's lease expires so another worker takes the delivery over. The worker keeps a
pipeline of sends in flight, so one slow receiver never holds up the rest: each endpoint has a
small concurrency bound, and a delivery whose endpoint is busy is deferred, not waited on.

Outcomes are recorded by group commit: a finished send waits for its outcome to be written,
and the outcomes that finish while one unit of work is being written go together in the next
(one ``update_many`` of the deliveries, one ``lock_many`` + ``update_many`` of their events), so
recording costs a few round trips per batch rather than per delivery. A crash before the
write loses nothing: the lease runs out and the delivery is sent again.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from urllib.parse import urlsplit

import attrs

from application.collections import DELIVERIES, EVENTS, WEBHOOKS
from application.context import Context
from application.listing import condition, equals, one_of
from application.ports import SendResult, WebhookSender
from application.storage import Query
from application.webhooks import body_of, purge
from domain import webhook as rules
from domain.filtering import Op
from domain.webhook import Attempt, Delivery, DeliveryStatus, Event, Webhook

log = logging.getLogger("fourcorner.webhooks")


@attrs.frozen
class DeliverySettings:
    retry_delays: tuple[timedelta, ...] = (timedelta(seconds=30), timedelta(seconds=300))
    hex_signature_header: str = "x-webhook-sign"
    batch: int = 100
    lease: timedelta = timedelta(seconds=60)
    concurrency: int = 64
    per_endpoint: int = 16  # sends in flight to one endpoint
    per_endpoint_waiting: int = 16  # claimed deliveries waiting for one of those
    busy_deferral: timedelta = timedelta(seconds=1)
    poll_interval: float = 0.1
    purge_interval: float = 3600.0


@attrs.frozen
class Job:
    delivery: Delivery
    webhook: Webhook | None
    event: Event | None


class DeliveryWorker:
    def __init__(
        self,
        ctx: Context,
        sender: WebhookSender,
        settings: DeliverySettings,
        *,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self._ctx = ctx
        self._sender = sender
        self._settings = settings
        self._wall = wall_clock
        self._in_flight: set[asyncio.Task[None]] = set()
        self._sending: dict[str, asyncio.Semaphore] = {}
        self._waiting: dict[str, int] = {}
        self._wake = asyncio.Event()
        # outcomes waiting to be written, and the task writing them
        self._outcomes: list[tuple[Delivery, bool, asyncio.Future[None]]] = []
        self._writer: asyncio.Task[None] | None = None

    def wake(self) -> None:
        """Look for work now (called when this process raised an event)."""
        self._wake.set()

    async def claim(self, limit: int) -> list[Job]:
        now = self._ctx.clock()
        due = Query(
            where=(
                equals(DELIVERIES, "status", DeliveryStatus.PENDING),
                condition(DELIVERIES, "nextAttemptAt", Op.LTE, now),
                condition(DELIVERIES, "leaseUntil", Op.LT, now),
            ),
            limit=limit,
        )
        async with self._ctx.uow() as uow:
            deliveries = uow.repository(DELIVERIES)
            claimed = await deliveries.claim(due)
            if not claimed:
                return []
            hooks: dict[uuid.UUID, Webhook | None] = {}
            for d in claimed:
                if d.webhook_id not in hooks:
                    hooks[d.webhook_id] = await uow.repository(WEBHOOKS).get(d.webhook_id)
            wanted = {d.event_id for d in claimed}
            found = await uow.repository(EVENTS).list(
                Query(where=(one_of(EVENTS, "id", sorted(map(str, wanted))),), limit=len(wanted))
            )
            events = {e.id: e for e in found.items}
            leased = [attrs.evolve(d, lease_until=now + self._settings.lease) for d in claimed]
            await deliveries.update_many(leased)
            jobs = [Job(d, hooks[d.webhook_id], events.get(d.event_id)) for d in leased]
            await uow.commit()
        return jobs

    async def run_once(self) -> int:
        """Claim one batch and deliver it completely; returns how many were attempted."""
        jobs = await self.claim(self._settings.batch)
        await asyncio.gather(*(self._deliver(j) for j in jobs))
        return len(jobs)

    async def run(self, stop: asyncio.Event) -> None:
        last_purge = 0.0
        while not stop.is_set():
            if time.monotonic() - last_purge > self._settings.purge_interval:
                last_purge = time.monotonic()
                try:
                    removed = await purge(self._ctx)
                    if removed:
                        log.info("purged events", extra={"count": removed})
                except Exception:
                    log.exception("event purge failed")
            free = self._settings.concurrency - len(self._in_flight)
            jobs: list[Job] = []
            if free > 0:
                try:
                    jobs = await self.claim(min(free, self._settings.batch))
                except Exception:
                    log.exception("claiming deliveries failed")
            for job in jobs:
                task = asyncio.create_task(self._deliver(job))
                self._in_flight.add(task)
                task.add_done_callback(self._in_flight.discard)
            if len(jobs) < min(free, self._settings.batch) or free <= 0:
                await self._idle(stop)
        if self._in_flight:
            await asyncio.wait(self._in_flight, timeout=20)

    async def _idle(self, stop: asyncio.Event) -> None:
        self._wake.clear()
        waiters = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(self._wake.wait())]
        await asyncio.wait(
            waiters, timeout=self._settings.poll_interval, return_when=asyncio.FIRST_COMPLETED
        )
        for w in waiters:
            w.cancel()

    async def _deliver(self, job: Job) -> None:
        try:
            await self._attempt(job)
        except Exception:
            log.exception(
                "delivery failed unexpectedly", extra={"delivery_id": str(job.delivery.id)}
            )

    async def _attempt(self, job: Job) -> None:
        d, hook, event = job.delivery, job.webhook, job.event
        if hook is None or event is None or not hook.is_enabled:
            reason = "the webhook was deleted" if hook is None else "the webhook is disabled"
            attempt = Attempt(len(d.attempts) + 1, self._ctx.clock(), 0.0, error=reason)
            await self._record(attrs.evolve(d.record(attempt, ()), status=DeliveryStatus.FAILED))
            return
        endpoint = urlsplit(hook.url).netloc
        gate = self._sending.setdefault(endpoint, asyncio.Semaphore(self._settings.per_endpoint))
        if gate.locked() and self._waiting.get(endpoint, 0) >= self._settings.per_endpoint_waiting:
            # this endpoint has all it may have in flight and waiting: give the slot back to
            # the others and try again shortly
            later = self._ctx.clock() + self._settings.busy_deferral
            await self._record(
                attrs.evolve(d, next_attempt_at=later, lease_until=rules.NO_LEASE), count=False
            )
            return
        self._waiting[endpoint] = self._waiting.get(endpoint, 0) + 1
        entered = False
        try:
            async with gate:
                self._waiting[endpoint] -= 1
                entered = True
                result = await self._send(hook, event)
        finally:
            if not entered:
                self._waiting[endpoint] -= 1
        attempt = Attempt(
            number=len(d.attempts) + 1,
            at=self._ctx.clock(),
            duration_ms=result.duration_ms,
            status_code=result.status_code,
            error=result.error,
        )
        await self._record(d.record(attempt, self._settings.retry_delays))

    async def _send(self, hook: Webhook, event: Event) -> SendResult:
        body = body_of(event)
        secret = self._ctx.net.sealer.open(hook.sealed_secret).decode()
        message_id = f"msg_{event.id.hex}"
        timestamp = int(self._wall())
        headers = {
            "content-type": "application/json",
            "user-agent": "fourcorner-webhooks",
            "webhook-id": message_id,
            "webhook-timestamp": str(timestamp),
            "webhook-signature": rules.standard_signature(secret, message_id, timestamp, body),
            self._settings.hex_signature_header: rules.hex_signature(secret, body),
        }
        return await self._sender.send(hook.url, body, headers)

    async def _record(self, delivery: Delivery, *, count: bool = True) -> None:
        """Write ``delivery`` (and, with ``count``, its summary on its event); returns once
        it is committed, in a batch with whatever else finished meanwhile."""
        done = asyncio.get_running_loop().create_future()
        self._outcomes.append((delivery, count, done))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write_outcomes())
        await done

    async def _write_outcomes(self) -> None:
        while self._outcomes:
            batch, self._outcomes = (
                self._outcomes[: self._settings.batch],
                self._outcomes[self._settings.batch :],
            )
            try:
                await self._write([d for d, _, _ in batch], [d for d, count, _ in batch if count])
            except Exception as e:
                for _, _, done in batch:
                    if not done.done():
                        done.set_exception(e)
                continue
            for _, _, done in batch:
                if not done.done():
                    done.set_result(None)

    async def _write(self, deliveries: list[Delivery], counted: list[Delivery]) -> None:
        async with self._ctx.uow() as uow:
            await uow.repository(DELIVERIES).update_many(deliveries)
            if counted:
                events = uow.repository(EVENTS)
                found = {e.id: e for e in await events.lock_many([d.event_id for d in counted])}
                for d in counted:
                    event = found.get(d.event_id)
                    if event is not None:
                        found[d.event_id] = event.with_delivery(d.summary())
                changed = {d.event_id for d in counted} & found.keys()
                await events.update_many([found[i] for i in sorted(changed, key=str)])
            await uow.commit()
