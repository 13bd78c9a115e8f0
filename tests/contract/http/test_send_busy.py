"""A busy receiving access point (HTTP 503 or 429, with ``Retry-After``) delays a document but
does not use up its attempts for a while after its first refusal, however long the document
waited before it was first tried: the transport reads the wait it asks for, the next attempt
is stored due no sooner, the transaction's error says the receiver is busy and when the next
attempt is, and once the receiver takes the message the document completes. A receiver that
stays busy fails it after its attempts, in bounded time."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aiohttp import web

from fourcorner.application.collections import EVENTS, TRANSACTIONS
from fourcorner.domain.retry import LONGEST_ASKED
from fourcorner.domain.transaction import Status, Transaction
from fourcorner.domain.webhook import NO_LEASE
from fourcorner.entrypoints.container import resolve
from sbd_factory import make_sbd

from .conftest import BACKENDS, free_port
from .test_participants import ALICE, BOB, gln
from .test_send_retry import passed_on
from .test_transactions import receiving_participant


class BusyProxy:
    """Stands between the network and the server's AS4 endpoint: the first ``busy`` messages
    are answered at once, unread, with ``status`` and ``Retry-After: retry_after`` (as the
    endpoint's own AT-1504 is); the later ones are passed on."""

    def __init__(self, busy: int, retry_after: str, status: int = 503) -> None:
        self.busy, self.retry_after, self.status = busy, retry_after, status
        self.target = ""
        self.posts = 0

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.posts += 1
        if self.posts <= self.busy:
            return web.json_response(
                {"code": "AT-1504", "error": "too many messages in flight"},
                status=self.status,
                headers={"Retry-After": self.retry_after},
            )
        return await passed_on(request, await request.read(), self.target)


class OnClock:
    """A server on a clock the test moves (``at``, the one item of ``clock``)."""

    clock: list[datetime]

    @property
    def at(self) -> datetime:
        return self.clock[0]

    @at.setter
    def at(self, moment: datetime) -> None:
        self.clock[0] = moment


class Sender(OnClock):
    """A server whose AS4 messages go through ``proxy``, on a clock the test moves (``at``),
    with a document of Alice's to Bob taken in (``tx_id``); its sending worker is run one
    round at a time (``round``)."""

    def __init__(self, api: Any, proxy: BusyProxy, clock: list[datetime]) -> None:
        self.api, self.proxy, self.clock = api, proxy, clock
        self.tx_id = uuid.UUID(int=0)
        self.org: dict[str, Any] = {}

    async def round(self) -> int:
        worker = await resolve(self.api.container.sending_worker)
        return int(await worker.run_once())

    async def stored(self) -> Transaction:
        ctx = await resolve(self.api.container.context)
        async with ctx.uow() as uow:
            tx = await uow.repository(TRANSACTIONS).get(self.tx_id)
        assert tx is not None
        return tx

    async def shown(self) -> dict[str, Any]:
        """The transaction as the API shows it to its organisation."""
        path = f"/orgs/{self.org['id']}/transactions/{self.tx_id}"
        status, body = await self.api.call("GET", path, as_=ALICE)
        assert status == 200, body
        return dict(body)

    async def send_failed_events(self) -> int:
        ctx = await resolve(self.api.container.context)
        async with ctx.uow() as uow:
            events = await uow.repository(EVENTS).all(eventType="transaction.send_failed")
        return len(events)


@pytest.fixture
async def sender(start_api: Any, aiohttp_server: Any) -> Callable[..., Any]:
    async def start(backend: str, proxy: BusyProxy, **settings: Any) -> Sender:
        app = web.Application()
        app.router.add_post("/as4/{org}/{ap}", proxy.handle)
        port = free_port()
        await aiohttp_server(app, host="127.0.0.1", port=port)
        clock = [datetime.now(UTC)]
        api = await start_api(
            backend,
            public=True,
            clock=lambda: clock[0],
            ap_host=f"http://127.0.0.1:{port}/as4",
            **settings,
        )
        proxy.target = str(api.client.make_url("")).rstrip("/")
        s = Sender(api, proxy, clock)
        s.org = await api.org(ALICE)
        b = await api.org(BOB, legal_id="5560360793")
        alice, bob = f"0088:{gln(71)}", f"0088:{gln(72)}"
        await receiving_participant(api, s.org, alice, ALICE)
        await receiving_participant(api, b, bob, BOB)
        _, aps = await api.call("GET", f"/orgs/{s.org['id']}/aps/alltouse", as_=ALICE)
        sbd = make_sbd(sender=alice, receiver=bob)
        taken = await api.send(ALICE, s.org["id"], aps["items"][0]["id"], sbd)
        s.tx_id = uuid.UUID(taken["transactionId"])
        s.at = datetime.now(UTC)  # the document is due
        return s

    return start


def second(at: datetime) -> str:
    return f"{at:%Y-%m-%dT%H:%M:%SZ}"


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_busy_receiver_delays_the_document_as_asked_without_using_an_attempt(
    sender: Any, backend: str
) -> None:
    s = await sender(backend, BusyProxy(busy=1, retry_after="120"))
    t0 = s.at
    assert await s.round() == 1 and s.proxy.posts == 1
    busy = await s.stored()
    # due when the receiver asked (longer than the 30 s a failure waits), no attempt used,
    # the claim given back
    assert (busy.transaction_status, busy.attempts) == (Status.PROCESSING, 0)
    assert busy.next_attempt_at == t0 + timedelta(seconds=120)
    assert busy.lease_until == NO_LEASE
    error = (await s.shown())["serviceError"]
    assert (error["code"], error["action"]) == ("TXE-2006", "RETRY")
    assert error["message"].startswith(
        f"The receiving access point is busy: next attempt at {second(busy.next_attempt_at)}, "
        "not counted as an attempt (HTTP 503, Retry-After 120 s: "
    )
    # not due a second earlier
    s.at = busy.next_attempt_at - timedelta(seconds=1)
    assert await s.round() == 0 and s.proxy.posts == 1
    s.at = busy.next_attempt_at
    assert await s.round() == 1 and s.proxy.posts == 2
    done = await s.stored()
    assert (done.transaction_status, done.attempts) == (Status.COMPLETED, 0)
    assert "serviceError" not in await s.shown()
    assert await s.send_failed_events() == 0


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_document_first_tried_late_is_delayed_by_a_busy_receiver_as_a_new_one_is(
    sender: Any, backend: str
) -> None:
    """A document first tried 20 minutes after it was taken in (a backlog after an outage),
    refused busy at t, t + 30 s and t + 330 s: the first two use no attempt, the third (the
    span of its retries after the first refusal) one; the receiver then takes it. When the
    first refusal was is stored with it, so every worker (and a restarted one) measures from
    it."""
    s = await sender(backend, BusyProxy(busy=3, retry_after="30"))
    t = s.at = (await s.stored()).created_at + timedelta(minutes=20)
    assert await s.round() == 1
    tx = await s.stored()
    assert (tx.transaction_status, tx.attempts, tx.busy_since) == (Status.PROCESSING, 0, t)
    assert tx.next_attempt_at == t + timedelta(seconds=30)
    s.at = tx.next_attempt_at
    assert await s.round() == 1
    tx = await s.stored()
    assert (tx.attempts, tx.busy_since) == (0, t)
    s.at = t + timedelta(seconds=330)
    assert await s.round() == 1
    tx = await s.stored()
    assert (tx.transaction_status, tx.attempts, tx.busy_since) == (Status.PROCESSING, 1, t)
    assert ", 1 of its 3 attempts used (HTTP 503, " in (await s.shown())["serviceError"]["message"]
    s.at = tx.next_attempt_at
    assert await s.round() == 1 and s.proxy.posts == 4
    done = await s.stored()
    assert (done.transaction_status, done.attempts) == (Status.COMPLETED, 1)
    assert await s.send_failed_events() == 0


async def test_a_receiver_busy_for_good_fails_the_document_after_its_attempts(
    sender: Any,
) -> None:
    """Busy at every attempt, asking for 5 s: tried again every 30 s (the policy's first
    delay is longer) without using an attempt for the span of its retries (30 s + 300 s)
    after the first refusal, then three counted attempts, the last one failing it; one
    ``transaction.send_failed``, at the end."""
    s = await sender("sqlite", BusyProxy(busy=10**6, retry_after="5", status=429))
    span = timedelta(seconds=330)
    rounds: list[tuple[timedelta, int]] = []  # (time since the first refusal, attempts used)
    tx = await s.stored()
    first = s.at = max(s.at, tx.next_attempt_at)
    while not tx.sending_over:
        s.at = max(s.at, tx.next_attempt_at)
        assert await s.round() == 1
        tx = await s.stored()
        rounds.append((s.at - first, tx.attempts))
        assert len(rounds) < 30
    assert tx.busy_since == first
    young = [attempts for busy_for, attempts in rounds if busy_for < span]
    assert young and set(young) == {0}
    assert [attempts for busy_for, attempts in rounds if busy_for >= span] == [1, 2, 3]
    assert tx.transaction_status is Status.FAILED and tx.attempts == 3
    assert s.at - first <= span + 3 * max(timedelta(minutes=5), LONGEST_ASKED)
    shown = await s.shown()
    assert shown["serviceError"]["code"] == "TXE-2006"
    assert shown["serviceError"]["message"].startswith(
        "The receiving access point is busy: HTTP 429, Retry-After 5 s: "
    )
    assert s.proxy.posts == len(rounds) and await s.send_failed_events() == 1
