"""The webhook delivery worker: claims due deliveries from the outbox and sends them.

Any number of workers in any number of processes share the outbox: a claim sets a lease in
the same unit of work that selected the rows (``FOR UPDATE SKIP LOCKED`` on PostgreSQL), and a
crashed worker's lease expires so another worker takes the delivery over. The worker keeps a
pipeline of sends in flight, so one slow receiver never holds up the rest: each endpoint has a
small concurrency bound, and a delivery whose endpoint is full is left due, not waited on.

An endpoint is an organisation's host and port (``_endpoint``), however its URLs spell them
(``domain.webhook_target.host_of``: a user name, capitals, the default port written out or a
trailing dot make no other host, else one organisation could have as many bounds at one host as
it has spellings of it): a host that serves many organisations' webhooks (a relay, a
multi-tenant receiver) gets each organisation's deliveries through a bound of its own. Keyed by
host alone, one organisation whose deliveries there are slow to answer (many webhooks, or many
events, to URLs that hang until the timeout) would fill the host's places in flight and
waiting, and every other organisation's deliveries to that host would wait behind them; so the
host may have ``per_endpoint`` in flight for each organisation sending to it. Many
organisations (a user may make any number) whose webhooks point at one host that hangs would
then take every place of the worker, and every other host's deliveries would wait; so a host,
whoever's webhooks point at it, holds at most ``per_host`` of the worker's ``concurrency``
(half by default), sending and waiting, and a claim leaves a delivery due when its host is full
as when its endpoint is (``application.places`` keeps the count). The bound is by host name and
port: one who has many names that hang (a wildcard domain), or many ports, has ``per_host``
at each of them, and with enough of them every place of the worker.

A webhook whose endpoint answers busy (HTTP 429 or 503) is retried as ``Delivery.record``
says: no sooner than its ``Retry-After`` asks, and without using up an attempt for a while.
Its other deliveries are held back too, by this worker: until the time a delivery refused now
for the first time would wait (``RetryPolicy.busy_wait``: the first retry delay, or the
``Retry-After`` when longer, of which at most an hour), a claim leaves them due and those already claimed and waiting for their turn
are given back unsent, due then (``Delivery.deferred``: no attempt made, none used). The hold
is by webhook, not by endpoint (host and port): a ``Retry-After`` answers a request to one
URL, and a host that serves many organisations' webhooks (a relay) limits each on its own, so
one webhook's limit must not hold back another's deliveries. It is this worker's alone, in
memory (at most ``HELD_MOST`` webhooks; a worker in another process, or one restarted, sends
them and is told again), and bounded in time; every delivery it holds back is sent when it
ends, and meets the endpoint's answer itself.

Outcomes are recorded by group commit: a finished send waits for its outcome to be written, and
the outcomes that finish while one unit of work is being written go together in the next (one
``lock_many`` of their events, one ``update_leased`` of the deliveries and one ``update_many``
of the events, sent with the commit), so recording costs a few round trips per batch rather
than per delivery. A crash before the write loses nothing: the lease runs out and the delivery
is sent again. An outcome is written only while the delivery holds the lease this worker's
claim gave it, compared by the write itself: a worker whose lease ran out while it sent may
find that a worker, another or itself, claimed the delivery since (and sent it, and recorded
what it met), and then leaves it to that claim.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta

import attrs

from fourcorner.application import idempotency, telemetry
from fourcorner.application.collections import DELIVERIES, EVENTS
from fourcorner.application.context import Context
from fourcorner.application.idle import idle
from fourcorner.application.places import NO_ENDPOINT, Endpoint, Places
from fourcorner.application.ports import KeySealer, SendResult, WebhookSender
from fourcorner.application.repositories import Deliveries, Events, Webhooks
from fourcorner.application.sealed import WEBHOOK_SECRET
from fourcorner.application.webhooks import body_of, purge
from fourcorner.domain import webhook as rules
from fourcorner.domain.errors import SecretUnusable
from fourcorner.domain.retry import RetryPolicy
from fourcorner.domain.webhook import (
    DELIVERY_RETRY,
    Attempt,
    Delivery,
    DeliveryStatus,
    Event,
    Webhook,
)
from fourcorner.domain.webhook_target import host_key, host_of, host_text

log = logging.getLogger("fourcorner.webhooks")

HELD_MOST = 256  # webhooks a worker holds back at once (each a value in its claims)


@attrs.frozen
class DeliverySettings:
    retry: RetryPolicy = DELIVERY_RETRY
    hex_signature_header: str = "x-webhook-sign"
    batch: int = 100
    lease: timedelta = timedelta(seconds=60)
    concurrency: int = 128
    per_endpoint: int = 32  # sends in flight to one endpoint (an organisation's host)
    per_endpoint_waiting: int = 32  # claimed deliveries waiting for one of those
    # deliveries to one host (and port), whoever's, sending and waiting: 0, half of concurrency
    per_host: int = 0
    poll_interval: float = 0.1
    purge_interval: float = 3600.0

    @property
    def host_places(self) -> int:
        """The places one host may hold: ``per_host``, else half of ``concurrency`` (one at
        least)."""
        return self.per_host or max(1, self.concurrency // 2)


@attrs.frozen
class Outcome:
    """A delivery as a send left it, and the lease of the claim the send was made under."""

    lease: datetime
    delivery: Delivery

    @property
    def key(self) -> tuple[uuid.UUID, datetime]:
        """The delivery and the lease: what the stored delivery holds while the claim does."""
        return self.delivery.id, self.lease


@attrs.frozen
class Job:
    delivery: Delivery
    webhook: Webhook | None
    event: Event | None


class DeliveryWorker:
    def __init__(
        self,
        ctx: Context,
        sealer: KeySealer,
        sender: WebhookSender,
        settings: DeliverySettings,
        *,
        wall_clock: Callable[[], float] | None = None,
    ) -> None:
        self._ctx = ctx
        self._sealer = sealer
        self._sender = sender
        self._settings = settings
        # the seconds of the signatures' timestamps: the context's clock unless given
        self._wall = wall_clock or (lambda: ctx.clock().timestamp())
        self._in_flight: set[asyncio.Task[None]] = set()
        # deliveries leased and not yet finished, by endpoint and host
        self._places = Places(
            settings.per_endpoint + settings.per_endpoint_waiting, settings.host_places
        )
        # the gate of an endpoint's sends, while this worker holds deliveries to it (dropped
        # with the endpoint's places when the last one is finished)
        self._sending: dict[Endpoint, asyncio.Semaphore] = {}
        self.blocked = False  # the last claim left deliveries due for lack of room
        self._finished = 0  # deliveries finished since the start
        self._finish_target = 0
        self._progress = asyncio.Event()  # set when _finished reaches _finish_target
        self._wake = asyncio.Event()
        # outcomes waiting to be written (each with the lease of the claim it ends), and the
        # task writing them; each future says whether its outcome was written
        self._outcomes: list[tuple[Outcome, asyncio.Future[bool]]] = []
        self._writer: asyncio.Task[None] | None = None
        # opened signing secrets, by webhook and sealed text (a new secret is a new key)
        self._secrets: dict[tuple[uuid.UUID, str], str] = {}
        # webhooks that answered busy, and until when their deliveries are held back
        self._held: dict[uuid.UUID, datetime] = {}
        # the leases of the deliveries this worker holds, by delivery (several when its
        # lease ran out during a send and it claimed the delivery again), and those of them
        # it claimed again since: the outcomes of those are not written (``_not_recorded``)
        self._leases: dict[uuid.UUID, list[datetime]] = {}
        self._superseded: set[tuple[uuid.UUID, datetime]] = set()

    def wake(self) -> None:
        """Look for work now (called when this process raised an event)."""
        self._wake.set()

    async def claim(self, limit: int) -> list[Job]:
        """Lease up to ``limit`` due deliveries, none to an endpoint that already has all it
        may have in flight and waiting here (``per_endpoint + per_endpoint_waiting``), none to
        a host that has (``per_host``), nor to a webhook held back (it answered busy): the
        query leaves out those webhooks, and those hosts by the one each delivery holds
        (``Delivery.host``), so their backlog neither blocks other endpoints' deliveries nor
        costs a write; it stays due for when there is room, or the hold has ended. A delivery
        read whose webhook's URL names another host than it holds is given that host (written
        with its lease, or alone when it is left due): it is counted, and sent, where the URL
        names, and left out from then on while that host is full, not while the other is."""
        now = self._ctx.clock()
        full = sorted(
            {str(hook_id) for hook_id in self._places.full()}
            | set(self._still_held(now) if self._held else [])
        )
        full_hosts = sorted(host_text(host) for host in self._places.full_hosts())
        self.blocked = False
        async with self._ctx.uow() as uow:
            deliveries = Deliveries(uow)
            claimed = await deliveries.claim_due(now, limit, full, full_hosts)
            if not claimed:
                return []
            wanted_hooks = sorted({d.webhook_id for d in claimed}, key=str)
            hooks: dict[uuid.UUID, Webhook | None] = dict.fromkeys(wanted_hooks)
            hooks |= {h.id: h for h in await Webhooks(uow).with_ids(wanted_hooks)}
            until = now + self._settings.lease
            tally = self._places.claim()
            # the host the webhook's URL names now, of those that hold another (raised from
            # the webhook read before its URL changed, or written back by a send begun before)
            hosts = _hosts_now(claimed, hooks)
            leased = [
                attrs.evolve(d, lease_until=until, host=hosts.get(d.id, d.host))
                for d in claimed
                if tally.take(*_place_of(hooks[d.webhook_id]))
            ]
            self.blocked = tally.blocked  # some left due, for when a send has finished
            events: dict[uuid.UUID, Event] = {}
            if leased or hosts:
                wanted_events = list({d.event_id for d in leased})
                events = {e.id: e for e in await Events(uow).with_ids(wanted_events)}
                # that column alone, but of those that move, which are written whole
                await deliveries.lease([d.id for d in leased if d.id not in hosts], until)
                moved = {d.id: d for d in leased if d.id in hosts}
                before = [d for d in claimed if d.id in hosts]
                after = [moved.get(d.id) or attrs.evolve(d, host=hosts[d.id]) for d in before]
                await deliveries.update_many(after, before=before)
                await uow.commit()
        # counted once written; the webhooks seen are kept even when none was leased, so the
        # next claim leaves out those of full endpoints (and the full hosts, by count)
        self._places.took(tally)
        for d in leased:
            earlier = self._leases.setdefault(d.id, [])
            self._superseded.update((d.id, lease) for lease in earlier)
            earlier.append(until)
        return [Job(d, hooks[d.webhook_id], events.get(d.event_id)) for d in leased]

    def _still_held(self, now: datetime) -> list[str]:
        """The webhooks held back at ``now``; those whose hold has ended are let go."""
        for hook_id in [h for h, until in self._held.items() if until <= now]:
            del self._held[hook_id]
        return [str(h) for h in self._held]

    def _hold(self, hook_id: uuid.UUID, until: datetime) -> None:
        """Hold back ``hook_id``'s deliveries until ``until`` (or longer, if held so already);
        none more once ``HELD_MOST`` are held."""
        if hook_id not in self._held and len(self._held) >= HELD_MOST:
            self._still_held(self._ctx.clock())
            if len(self._held) >= HELD_MOST:
                return
        self._held[hook_id] = max(self._held.get(hook_id, until), until)

    def _holding(self, hook_id: uuid.UUID) -> datetime | None:
        """Until when ``hook_id``'s deliveries are held back; None: they are not."""
        until = self._held.get(hook_id)
        return until if until is not None and until > self._ctx.clock() else None

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
                    removed = await idempotency.purge(self._ctx)
                    if removed:
                        log.info("purged idempotency keys", extra={"count": removed})
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
            if (free <= 0 or self.blocked) and self._in_flight:
                # full, or endpoints are: claim again once a few sends have finished (one
                # claim refills several places rather than each its own)
                refill = max(1, self._settings.per_endpoint_waiting // 2)
                await self._until_finished(min(refill, len(self._in_flight)))
            elif self.blocked or len(jobs) < min(free, self._settings.batch):
                await idle(stop, self._settings.poll_interval, self._wake)
        if self._in_flight:
            await asyncio.wait(self._in_flight, timeout=20)

    async def _until_finished(self, count: int) -> None:
        """Wait until ``count`` more deliveries have finished, or the poll interval passed."""
        self._finish_target = self._finished + count
        self._progress.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self._settings.poll_interval):
                await self._progress.wait()

    async def _deliver(self, job: Job) -> None:
        endpoint = _place_of(job.webhook)[0]
        try:
            await self._attempt(job)
        except Exception:
            log.exception(
                "delivery failed unexpectedly", extra={"delivery_id": str(job.delivery.id)}
            )
        finally:
            self._let_go(job.delivery)
            if self._places.finish(endpoint):
                # none in flight, so none holds or waits for its gate: forget the endpoint
                self._sending.pop(endpoint, None)
            self._finished += 1
            if self._finished >= self._finish_target:
                self._progress.set()

    def _let_go(self, delivery: Delivery) -> None:
        """Forget the lease of ``delivery``'s claim, whose job has finished."""
        key = (delivery.id, delivery.lease_until)
        self._superseded.discard(key)
        leases = self._leases.get(delivery.id, [])
        if key[1] in leases:
            leases.remove(key[1])
        if not leases:
            self._leases.pop(delivery.id, None)

    async def _attempt(self, job: Job) -> None:
        d, hook, event = job.delivery, job.webhook, job.event
        if hook is None or event is None or not hook.is_enabled:
            reason = "the webhook was deleted" if hook is None else "the webhook is disabled"
            attempt = Attempt(d.next_number, self._ctx.clock(), 0.0, error=reason)
            if await self._record(d, d.record(attempt, self._settings.retry, retryable=False)):
                telemetry.webhook_attempt(d.id, d.webhook_id, "given_up", reason)
            return
        endpoint = _endpoint(hook)
        gate = self._sending.setdefault(endpoint, asyncio.Semaphore(self._settings.per_endpoint))
        policy = self._settings.retry
        async with gate:  # claims never lease more than this gate plus its queue may hold
            # held back (the webhook answered busy while this one waited its turn), or sent
            outcome = self._holding(hook.id) or await self._send(hook, event)
            at = self._ctx.clock()
            if isinstance(outcome, SendResult) and outcome.busy:
                # held before the next one in line is let through: the webhook's other
                # deliveries wait as one it refused now for the first time would
                self._hold(hook.id, at + policy.busy_wait(0, outcome.retry_after))
        if isinstance(outcome, datetime):
            await self._record(d, d.deferred(outcome))
            return
        result = outcome
        attempt = Attempt(
            number=d.next_number,
            at=at,
            duration_ms=result.duration_ms,
            status_code=result.status_code,
            error=result.error,
            response_body=result.response_body,
        )
        done = d.record(attempt, policy, busy=result.busy, asked=result.retry_after)
        if not await self._record(d, done):
            return
        outcomes = {DeliveryStatus.DELIVERED: "delivered", DeliveryStatus.FAILED: "given_up"}
        cause = done.attempts[-1].busy or result.error or f"HTTP {result.status_code}"
        telemetry.webhook_attempt(d.id, hook.id, outcomes.get(done.status, "failed"), cause)

    async def _send(self, hook: Webhook, event: Event) -> SendResult:
        body = body_of(event)
        try:
            secret = self._secret(hook)
        except SecretUnusable as e:  # an attempt that failed, with the reason on the event
            log.error("webhook not sent", extra={"webhook_id": str(hook.id), "problem": str(e)})
            return SendResult(duration_ms=0.0, error=e.message())
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

    def _secret(self, hook: Webhook) -> str:
        """``hook``'s signing secret, opened once for as long as it is the same."""
        key = (hook.id, hook.sealed_secret)
        secret = self._secrets.get(key)
        if secret is None:
            if len(self._secrets) >= 10_000:  # bounded: start again when full
                self._secrets.clear()
            secret = self._secrets[key] = WEBHOOK_SECRET.open(self._sealer, hook)
        return secret

    async def _record(self, claimed: Delivery, delivery: Delivery) -> bool:
        """Write ``delivery``, the outcome of ``claimed`` (as this worker's claim leased it),
        and its summary on its event; returns once it is committed, in a batch with whatever
        else finished meanwhile: whether it was written (not when another worker has claimed
        the delivery since, nor when retention removed it)."""
        done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._outcomes.append((Outcome(claimed.lease_until, delivery), done))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write_outcomes())
        return await done

    async def _write_outcomes(self) -> None:
        while self._outcomes:
            batch, self._outcomes = (
                self._outcomes[: self._settings.batch],
                self._outcomes[self._settings.batch :],
            )
            try:
                written = await self._write([outcome for outcome, _ in batch])
            except Exception as e:
                for _, done in batch:
                    if not done.done():
                        done.set_exception(e)
                continue
            for outcome, done in batch:
                if not done.done():
                    done.set_result(outcome.key in written)

    async def _write(self, outcomes: list[Outcome]) -> set[tuple[uuid.UUID, datetime]]:
        """Write the outcomes whose deliveries still hold the lease of the claim they end;
        return the ``Outcome.key`` of those written. Retention (``purge``) may have removed a
        delivery with its event meanwhile, and one whose lease ran out may have been claimed
        by another worker since, which leased it anew and records what its own send met.
        Events are locked first, as ``purge`` and a redelivery take them (``purge`` is the
        only way a delivery goes, always with its event and holding that event's lock), then
        the deliveries are written where they still hold the lease, compared by the write
        itself (``update_leased``: no read of them first); a claim skips what is locked, and
        waits for nothing."""
        async with self._ctx.uow() as uow:
            events = uow.repository(EVENTS)
            ids = [o.delivery.event_id for o in outcomes]
            held = {e.id: e for e in await events.lock_many(ids)}
            leased = [(o.delivery, o.lease) for o in outcomes if o.delivery.event_id in held]
            written = await uow.repository(DELIVERIES).update_leased(leased)
            found = dict(held)
            for d, _ in written:
                found[d.event_id] = found[d.event_id].with_delivery(d.summary())
            changed = sorted({d.event_id for d, _ in written}, key=str)
            # held under lock: the events' write may go out with the commit
            await events.update_many([found[i] for i in changed], before=[held[i] for i in changed])
            await uow.commit()
        keys = {(d.id, lease) for d, lease in written}
        for o in outcomes:
            if o.key not in keys:
                self._not_recorded(o, removed=o.delivery.event_id not in found)
        return keys

    def _not_recorded(self, outcome: Outcome, *, removed: bool) -> None:
        """Say why ``outcome`` was not written: retention removed the delivery with its
        event (``removed``), or its lease ran out during the send and it was claimed again
        since, by this worker (``_superseded``) or by another."""
        if removed:
            why = "retention removed it with its event"
        elif outcome.key in self._superseded:
            why = "its lease ran out during the send and this worker claimed it again since"
        else:
            why = "its lease ran out during the send and another worker claimed it since"
        log.warning(
            f"a delivery's outcome is not recorded: {why}",
            extra={"delivery_id": str(outcome.delivery.id)},
        )


def _endpoint(hook: Webhook) -> Endpoint:
    """Where ``hook``'s deliveries go, as the worker bounds them: its organisation's share of
    its URL's host and port (the module's docstring says why per organisation), however the
    URL spells them."""
    return hook.org_id, _host_of(hook.url)


# the host and port of a URL, kept for the URLs seen lately (each delivery asks, thrice)
_host_of = functools.lru_cache(maxsize=4096)(host_of)


def _hosts_now(
    claimed: list[Delivery], hooks: dict[uuid.UUID, Webhook | None]
) -> dict[uuid.UUID, str]:
    """The host each delivery of ``claimed`` that holds another than its webhook's URL names
    should hold (``Delivery.host``), by delivery; none of a webhook deleted meanwhile."""
    found: dict[uuid.UUID, str] = {}
    for d in claimed:
        hook = hooks[d.webhook_id]
        if hook is not None and d.host != (host := host_key(hook.url)):
            found[d.id] = host
    return found


def _place_of(hook: Webhook | None) -> tuple[Endpoint, uuid.UUID | None]:
    """The endpoint a delivery by ``hook`` is counted at, and the webhook a claim may leave
    out for it; a webhook deleted meanwhile: ``NO_ENDPOINT`` and none (it is sent nowhere)."""
    return (_endpoint(hook), hook.id) if hook is not None else (NO_ENDPOINT, None)
