"""Sending documents to the network (corner 2): the worker over the transactions outbox.

Like webhook delivery, claims hold a lease, a crashed worker's claim expires, and failures the
``RetryPolicy`` retries are tried again later; a receiving access point that is busy (HTTP 503
or 429) is tried again no sooner than its ``Retry-After`` asks, and its refusals use up no
attempt for a while after the transaction's first one (``RetryPolicy.after_busy``). A send's
AS4 message is built once and kept in the blob store until the send is finished, so every
attempt posts the same bytes: a receiver that took an earlier attempt (whose answer was lost,
or whose sender crashed) answers with the receipt it stored, and that receipt checks out. What
happens to the transaction is its own methods (``domain.transaction``); each is applied to the
stored transaction, the one this worker wrote last when it is still stored
(``Repository.replace``), else one read under a lock, so what others wrote meanwhile (a message
level status) stays.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

import attrs

from fourcorner.application import telemetry, webhooks
from fourcorner.application.collections import ACCESS_POINTS, ARTEFACTS, CERTIFICATES, TRANSACTIONS
from fourcorner.application.context import Context
from fourcorner.application.idle import idle
from fourcorner.application.ports import (
    ApTransport,
    Credentials,
    Delivered,
    KeySealer,
    LookupFailed,
    LookupProblem,
    MessageReader,
    ParticipantLookup,
    Refused,
)
from fourcorner.application.publishing import wire_profile
from fourcorner.application.repositories import Transactions
from fourcorner.application.sealed import CERTIFICATE_KEY
from fourcorner.application.storage import UnitOfWork
from fourcorner.application.transactions import Documents, blob_key, message_key, working_keys
from fourcorner.domain import events
from fourcorner.domain import send_failures as txe
from fourcorner.domain.envelope import (
    PARTICIPANT_SCHEME,
    Addressing,
    Identifier,
    MessageLevelStatus,
    mls_envelope,
    seat_spid,
)
from fourcorner.domain.errors import DomainError, IllegalTransition, SecretUnusable
from fourcorner.domain.network_services import AccessPoint
from fourcorner.domain.retry import RetryPolicy
from fourcorner.domain.text import cut
from fourcorner.domain.transaction import (
    Artefact,
    ArtefactType,
    Kind,
    Status,
    Transaction,
)

# named as before sending and receiving were apart: log lines carry it (`logger`)
log = logging.getLogger("fourcorner.exchange")

# How a failed lookup of the receiver fails the send (an unreachable DNS or SMP retries, and
# so does a certificate whose revocation cannot be checked yet).
LOOKUP_FAILURES = {
    LookupProblem.NOT_REGISTERED: txe.RECEIVER_NOT_FOUND,
    LookupProblem.NOT_ACCEPTED: txe.DOCUMENT_NOT_ACCEPTED,
    LookupProblem.UNREACHABLE: txe.SMP_UNREACHABLE,
    LookupProblem.SMP_UNTRUSTED: txe.SMP_UNTRUSTED,
    LookupProblem.ENDPOINT_UNTRUSTED: txe.ENDPOINT_UNTRUSTED,
    LookupProblem.INSECURE: txe.PEER_NOT_HTTPS,
    LookupProblem.REVOCATION_UNKNOWN: txe.REVOCATION_UNKNOWN,
}
# the working blobs of this many ended sends are removed in one call while others are in flight
REMOVED_AT_ONCE = 8
# A kept message (a receipt) of at most this many bytes goes in the transaction that records
# the parties (the end of the send); a larger one is stored before it, so that transaction
# holds no lock while it is written.
KEPT_WITH_PARTIES = 1024 * 1024
SEND_RETRY = RetryPolicy((timedelta(seconds=30), timedelta(minutes=5)), max_attempts=3)


@attrs.frozen
class Exchange:
    """The network side of sending and receiving: its ports and settings."""

    lookup: ParticipantLookup
    transport: ApTransport
    reader: MessageReader
    seat_id: str  # this service provider's seat id (its AP certificates' CN)
    retry: RetryPolicy = SEND_RETRY
    lease: timedelta = timedelta(minutes=2)
    concurrency: int = 16
    poll_interval: float = 0.1
    # How long a positive MLS (ALWAYS_SEND) waits for the receiving organisation to confirm
    # the document (then AP is sent instead of AB); at most 20 minutes by the network's policy.
    confirm_window: timedelta = timedelta(0)

    @property
    def spid(self) -> str:
        return seat_spid(self.seat_id)


async def credentials_of(sealer: KeySealer, uow: UnitOfWork, ap: AccessPoint) -> Credentials:
    cert = await uow.repository(CERTIFICATES).get(ap.certificate_ref)
    if cert is None:
        raise DomainError()
    key = CERTIFICATE_KEY.open(sealer, cert, user=f"access point {ap.id}")
    return Credentials(cert.cert_pem, key, cert.ca_chain_pem, ap.environment)


def failure_of(outcome: Refused) -> txe.TransportFailure:
    """Why an AS4 message was not delivered, in the TXE catalogue."""
    if outcome.not_serviced:
        return txe.NOT_SERVICED
    if outcome.bad_receipt:
        return txe.RECEIPT_INVALID
    if outcome.busy:
        return txe.AP_BUSY
    if outcome.retryable and outcome.code.startswith("connection"):
        return txe.AP_UNREACHABLE
    return txe.AP_HTTP_ERROR if outcome.retryable else txe.AP_REFUSED


def cause_of(outcome: Refused) -> str:
    """What a refusal says, for the transaction's error: its code (with the wait a busy
    receiver asked for, in seconds) and detail."""
    asked = outcome.retry_after
    waits = f", Retry-After {asked.total_seconds():g} s" if asked is not None else ""
    return f"{outcome.code}{waits}: {outcome.detail}"


def addressing_of(tx: Transaction) -> Addressing:
    """What the header of a document's SBD says, as recorded from it when it was taken in
    (``Transaction.outbound``; the SBD was read whole and checked then, and is not parsed
    again to send it): its participants are of the one scheme a header may name, and an
    identifier scheme holds no ``:``, so a recorded ``scheme::value`` splits at its first
    ``::``."""
    document_scheme, _, document = tx.doc_type_id.partition("::")
    process_scheme, _, process = tx.process_id.partition("::")
    return Addressing(
        Identifier(PARTICIPANT_SCHEME, tx.sender_id),
        Identifier(PARTICIPANT_SCHEME, tx.receiver_id),
        Identifier(document_scheme, document),
        Identifier(process_scheme, process),
    )


Move = Callable[[Transaction, datetime], Transaction]


@attrs.frozen
class Claimed:
    """A transaction the worker claimed to send; ``first``: claimed for the first time (it
    was UNPROCESSED, no attempt made), so no AS4 message of it can have been kept."""

    tx: Transaction
    first: bool


class SendingWorker:
    def __init__(
        self, ctx: Context, sealer: KeySealer, docs: Documents, exchange: Exchange
    ) -> None:
        self._ctx, self._sealer, self._docs, self._x = ctx, sealer, docs, exchange
        self._in_flight: set[asyncio.Task[None]] = set()
        self._wake = asyncio.Event()
        self._finished: list[str] = []  # the working blobs of sends that ended, to remove

    def wake(self) -> None:
        self._wake.set()

    async def claim(self, limit: int) -> list[Claimed]:
        now = self._ctx.clock()
        async with self._ctx.uow() as uow:
            due = await Transactions(uow).claim_due(now, limit)  # held until the commit
            claimed = [
                # never claimed before: no attempt of it has kept a message
                Claimed(
                    tx.claimed(now, self._x.lease),
                    tx.transaction_status is Status.UNPROCESSED and not tx.attempts,
                )
                for tx in due
            ]
            await uow.repository(TRANSACTIONS).update_many([job.tx for job in claimed], before=due)
            await uow.commit()
        for job in claimed:
            telemetry.transaction_status(job.tx)
        return claimed

    async def run_once(self) -> int:
        jobs = await self.claim(self._x.concurrency)
        await asyncio.gather(*(self.process(job) for job in jobs))
        await self._remove_finished()
        return len(jobs)

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await self._remove_finished()
            free = self._x.concurrency - len(self._in_flight)
            jobs: list[Claimed] = []
            if free > 0:
                try:
                    jobs = await self.claim(free)
                except Exception:
                    log.exception("claiming transactions failed")
            for job in jobs:
                task = asyncio.create_task(self.process(job))
                self._in_flight.add(task)
                task.add_done_callback(self._in_flight.discard)
            # fewer than asked: none was left due (another claim now would find none, a round
            # trip or two for nothing), so wait as after an empty one
            if len(jobs) < max(free, 1):
                await idle(stop, self._x.poll_interval, self._wake)
        if self._in_flight:
            await asyncio.wait(self._in_flight, timeout=30)
        await self._remove_finished()

    async def _remove_finished(self) -> None:
        """The working blobs of the sends that ended since the last call, removed at once
        (one statement in the database store): a busy worker removes a few sends' at a time,
        an idle one each send's as it ends. Those a crash (or a failure here) leaves, no
        transaction uses any more, so the sweep removes them."""
        keys, self._finished = self._finished, []
        if keys:
            try:
                await self._docs.blobs.delete_all(keys)
            except Exception:
                log.exception("removing the blobs of finished sends failed")

    async def process(self, job: Claimed) -> None:
        """Send ``job``, claimed by this worker; a send another worker took over is abandoned
        (logged), and so is one that fails unexpectedly (logged, tried again once its lease
        runs out)."""
        tx = job.tx
        try:
            await self._send(tx, first=job.first)
        except IllegalTransition as e:  # another worker took it over (this one's lease ran out)
            log.warning("send abandoned: %s", e.message(), extra={"transaction_id": str(tx.id)})
        except Exception:
            log.exception("sending failed unexpectedly", extra={"transaction_id": str(tx.id)})
        # the last send in flight, or enough ended: their blobs go now (else with later ones)
        if len(self._finished) >= REMOVED_AT_ONCE or len(self._in_flight) <= 1:
            await self._remove_finished()

    async def _send(self, tx: Transaction, *, first: bool) -> None:
        ctx = self._ctx
        try:
            async with ctx.reads() as uow:
                ap = await uow.repository(ACCESS_POINTS).get(tx.ap_id)
                creds = await credentials_of(self._sealer, uow, ap) if ap else None
        except SecretUnusable as e:
            await self._cannot_send(tx, txe.SENDER_UNUSABLE, e.message())
            return
        if ap is None or creds is None:
            await self._cannot_send(tx, txe.AP_REFUSED, "the access point no longer exists")
            return
        made: list[tuple[str, bytes]] = []  # the status's document, made now: kept below
        if tx.kind is Kind.MLS:
            sbd, addressing, made = await self._mls_document(tx, first=first)
        else:
            sbd = await self._docs.blobs.get(blob_key(tx.id, ArtefactType.BUSINESS_DOCUMENT))
            addressing = addressing_of(tx)
        try:
            endpoint = await self._x.lookup.endpoint(
                addressing.receiver,
                addressing.document_type,
                addressing.process,
                wire_profile(ctx.catalogue, tx.transport_profile),
                ap.environment,
            )
        except LookupFailed as e:
            telemetry.lookup_failed(tx, e.problem.value, e.reason)
            await self._attempt_failed(tx, LOOKUP_FAILURES[e.problem], e.reason)
            return
        kept_key = message_key(tx.id)
        kept: bytes | None = None
        if not first:  # an earlier attempt (or a worker that crashed) may have kept one
            try:
                kept = await self._docs.blobs.get(kept_key)
            except (FileNotFoundError, KeyError):
                kept = None
        prepared = await self._x.transport.prepare(
            sbd=sbd,
            addressing=addressing,
            endpoint=endpoint,
            credentials=creds,
            message_id=f"{tx.id}@fourcorner",
            kept=kept,
        )
        # Kept before it is posted, so a retry (after a lost answer or a crash) posts the same
        # bytes and the receiver's stored receipt for them checks out; the parties are recorded
        # before it is posted too, so a message level status about it finds them: both in one
        # transaction when both are new (the first attempt) and the message is not large.
        parties = (prepared.sender_party, prepared.receiver_party)
        addressed = (tx.sender_sp, tx.receiver_sp) == parties
        kept_now: list[tuple[str, bytes]] = []
        if not prepared.reused:
            large = len(prepared.data) > KEPT_WITH_PARTIES
            if large and made:  # stored first: a kept message always finds its document kept
                await self._docs.blobs.put_all(made)
                made = []
            keep = [*made, (kept_key, prepared.data)]  # a status's document goes with its message
            if addressed:  # no parties to record: kept while the send is still this worker's
                await self._keep(tx, keep, parties)
            elif large:
                await self._docs.blobs.put_all(keep)
            else:
                kept_now = keep
        if not addressed:
            tx = await self._apply(tx, lambda t, now: t.addressed(*parties, now), blobs=kept_now)
        started = time.perf_counter()
        outcome = await self._x.transport.send(prepared, endpoint)
        took = time.perf_counter() - started
        if isinstance(outcome, Delivered):
            telemetry.sent(tx, "ok", took)
            await self._finish(tx, lambda t, now: t.completed(now), receipt=outcome.receipt)
            return
        failure = failure_of(outcome)
        telemetry.sent(tx, failure.code, took)
        await self._attempt_failed(tx, failure, cause_of(outcome), asked=outcome.retry_after)

    async def _keep(
        self, tx: Transaction, blobs: list[tuple[str, bytes]], parties: tuple[str, str]
    ) -> None:
        """The blobs of a send whose parties are recorded already, kept before it is posted,
        in a unit of work that holds the stored transaction: only while the send is still this
        worker's (its claim's lease, and a move of the attempt still allowed, as recording the
        parties would check); ``IllegalTransition`` otherwise, and nothing is kept, so a
        worker whose lease ran out posts nothing over what another worker sent or finished. A
        large blob is written while the transaction is held (rare: a message over
        ``KEPT_WITH_PARTIES``)."""
        async with self._ctx.uow() as uow:
            current = await uow.repository(TRANSACTIONS).lock(tx.id)
            if current is None or current.lease_until != tx.lease_until:
                raise IllegalTransition(
                    record="transaction",
                    state=current.transaction_status.value if current else "removed",
                    move="kept for a send",
                    reason="another worker took it over (this one's lease ran out)",
                )
            current.addressed(*parties, self._ctx.clock())  # raises when the send is over
            await self._docs.blobs.put_all_in(uow, blobs)
            await uow.commit()

    async def _mls_document(
        self, tx: Transaction, *, first: bool
    ) -> tuple[bytes, Addressing, list[tuple[str, bytes]]]:
        """The MLS SBD of an MLS job, its addressing, and the blob to keep when it was made
        now (none when an earlier attempt kept it). It is made once and kept with the AS4
        message that carries it, before that is posted, so a retry resends the same bytes;
        one that was never posted is made anew. A first attempt (``first``) looks for no
        kept one: none can be."""
        key = blob_key(tx.id, ArtefactType.MLS)
        if not first:
            try:
                sbd = await self._docs.blobs.get(key)
            except (FileNotFoundError, KeyError):
                pass
            else:
                return sbd, Addressing.of(self._docs.envelopes.read(sbd)), []
        now = self._ctx.clock()
        rejected = tx.mls_response_code == "RE"
        status = MessageLevelStatus(
            response_code=tx.mls_response_code or "AB",
            original_instance_id=tx.doc_instance_id,
            id=str(self._ctx.new_id()),
            issued_at=now,
            sender_spid=self._x.spid,
            receiver_spid=seat_spid(tx.receiver_sp),
            description=tx.mls_description if rejected else "",
            reasons=(tx.mls_lines or (("NA", tx.mls_reason, tx.mls_description),))
            if rejected
            else (),
        )
        receiver = Identifier("iso6523-actorid-upis", tx.receiver_id)
        envelope = mls_envelope(
            status,
            receiver=receiver,
            instance_id=str(self._ctx.new_id()),
            created_at=now,
            country_c1=tx.sender_country,
        )
        sbd = self._docs.envelopes.write(envelope, self._docs.envelopes.write_mls(status))
        return sbd, Addressing.of(envelope), [(key, sbd)]

    async def _cannot_send(self, tx: Transaction, failure: txe.TransportFailure, why: str) -> None:
        """Nothing could be attempted: FAILED at once, no attempt counted."""
        telemetry.send_failed(tx, failure.code, why, final=True)
        await self._apply(tx, lambda t, now: t.failed(failure.error(why), now), ends=True)

    async def _attempt_failed(
        self,
        tx: Transaction,
        failure: txe.TransportFailure,
        detail: str,
        *,
        asked: timedelta | None = None,
    ) -> None:
        """An attempt failed: tried again later as the retry policy says, or FAILED. The
        next attempt's due time is stored with it, in the same statement, as durable as the
        rest (a worker that stops after it loses nothing); a busy receiver's ``asked`` wait
        only moves it later (``Transaction.attempt_failed``). The detail, often the
        receiver's words, is cut at ``DETAIL_LENGTH`` before anything is put around it, and
        kept and logged so; what the transaction's error says about it (when the next attempt
        is) is kept whole (``TransportFailure.error``)."""
        detail = cut(detail, txe.DETAIL_LENGTH)
        policy = self._x.retry
        after = await self._apply(
            tx,
            lambda t, now: t.attempt_failed(failure, detail, now, policy, asked=asked),
            ends=True,
        )
        over = after.sending_over
        telemetry.send_failed(
            tx,
            failure.code,
            detail,
            final=over,
            next_attempt_at=None if over else after.next_attempt_at,
            counted=after.attempts > tx.attempts,
        )

    async def _finish(self, tx: Transaction, move: Move, *, receipt: bytes) -> None:
        key = blob_key(tx.id, ArtefactType.TRANSACTION_RECEIPT)
        # a receipt's size is the receiving access point's choice (up to MAX_ANSWER_BYTES)
        large = len(receipt) > KEPT_WITH_PARTIES
        if large:
            await self._docs.blobs.put(key, receipt)
        await self._apply(tx, move, ends=True, receipt=(key, receipt), receipt_stored=large)

    async def _apply(
        self,
        tx: Transaction,
        move: Move,
        *,
        ends: bool = False,
        receipt: tuple[str, bytes] | None = None,
        receipt_stored: bool = False,
        blobs: Sequence[tuple[str, bytes]] = (),
    ) -> Transaction:
        """``move`` applied to the stored transaction, read under a lock, and stored, with
        ``blobs`` (``BlobStore.put_all_in``: in the same transaction where the store can, no
        round trip of their own). When the move may end the send (``ends``) and does, its
        receipt (if delivered) is stored with it (unless ``receipt_stored``: before it) and
        kept as an artefact, the organisation hears of it (a document's event, in the same
        unit of work) and the blobs kept for the send go."""
        ctx, now = self._ctx, self._ctx.clock()
        # the organisation's webhooks, should the event be raised: read before (webhooks_of)
        raises = ends and tx.kind is Kind.DOCUMENT
        hooks = await webhooks.webhooks_of(ctx, tx.org_id) if raises else ()
        async with ctx.uow() as uow:
            repo = uow.repository(TRANSACTIONS)
            # As stored when this worker last wrote it (most often): replaced in one statement,
            # if it still is. Otherwise (a message level status came meanwhile, or another
            # worker took it over) the move is made again on the stored one, read under lock.
            after = _moved(tx, move, now)
            if after is None or not await repo.replace(tx, after):
                current = await repo.lock(tx.id) or tx
                after = move(current, now)
                await repo.update(after)
            over = ends and after.sending_over
            stored = [*blobs, receipt] if over and receipt and not receipt_stored else blobs
            if stored:  # after the first statement: sent with the next one or the commit
                await self._docs.blobs.put_all_in(uow, stored)
            if over and receipt is not None:
                key, size = receipt[0], len(receipt[1])
                # a new id, its row count unread: it goes out with the event or the commit
                await uow.repository(ARTEFACTS).add_many(
                    [
                        Artefact(
                            ctx.new_id(),
                            tx.id,
                            tx.org_id,
                            ArtefactType.TRANSACTION_RECEIPT,
                            "application/soap+xml",
                            size,
                            key,
                            now,
                        )
                    ]
                )
            if over and raises:
                name = events.TRANSACTION_SENT if receipt else events.TRANSACTION_SEND_FAILED
                await webhooks.raise_event(
                    ctx, uow, tx.org_id, name, self._docs.payloads.transaction(after), hooks
                )
            await uow.commit()
        if over:
            telemetry.transaction_status(after, now)
            self._finished += working_keys(after)  # removed with others' (_remove_finished)
        return after


def _moved(tx: Transaction, move: Move, now: datetime) -> Transaction | None:
    """``move`` applied to ``tx``; None when it cannot be (the stored one may differ)."""
    try:
        return move(tx, now)
    except IllegalTransition:
        return None
