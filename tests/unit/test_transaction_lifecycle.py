"""The transaction life cycle (``domain.transaction``): its factories, and its transitions as a
state machine checked against a simple model of which moves are allowed from which state."""

from __future__ import annotations

import itertools
import uuid
from datetime import UTC, datetime, timedelta

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from fourcorner.domain.envelope import (
    MLS_DOCUMENT_TYPE,
    Identifier,
    MlsType,
    Sbdh,
)
from fourcorner.domain.errors import ErrorKind, IllegalTransition
from fourcorner.domain.network_services import AccessPoint, Environment
from fourcorner.domain.organisation import UserRef
from fourcorner.domain.retry import LONGEST_ASKED, SHORTEST_BUSY_WAIT, RetryPolicy
from fourcorner.domain.send_failures import (
    AP_BUSY,
    AP_REFUSED,
    AP_UNREACHABLE,
    REJECTED_BY_RECEIVER,
    SENDER_UNUSABLE,
    TXE_CATALOGUE,
)
from fourcorner.domain.transaction import (
    Direction,
    Kind,
    Status,
    Transaction,
    message_key_of,
    mls_receiver,
)
from fourcorner.domain.webhook import NO_LEASE

NOW = datetime(2026, 1, 2, 10, tzinfo=UTC)
NS = int(NOW.timestamp()) * 1_000_000_000 + 123_456_789  # the nanoseconds are kept
LEASE = timedelta(minutes=2)
POLICY = RetryPolicy((timedelta(seconds=30), timedelta(minutes=5)), max_attempts=3)
ORG = uuid.UUID(int=1)
AP = AccessPoint(
    id=uuid.UUID(int=2),
    org_id=ORG,
    name="ap",
    ap_url="https://ap.example/as4",
    certificate_ref=uuid.UUID(int=3),
    transport_profile="peppol-transport-as4-v2_0",
    environment=Environment.TEST,
    created_at=NOW,
    created_by=UserRef("u"),
    last_modified_at=NOW,
    last_modified_by=UserRef("u"),
)
DOCUMENT = Sbdh(
    sender=Identifier("iso6523-actorid-upis", "0088:5790000000001"),
    receiver=Identifier("iso6523-actorid-upis", "0088:5790000000002"),
    instance_identifier="doc-1",
    standard="urn:oasis:names:specification:ubl:schema:xsd:Invoice-2",
    type_version="2.1",
    type="Invoice",
    created_at=NOW,
    document_type=Identifier("busdox-docid-qns", "invoice"),
    process=Identifier("cenbii-procid-ubl", "billing"),
    country_c1="BE",
    mls_to=Identifier("iso6523-actorid-upis", "0242:123456"),
    mls_type=MlsType.ALWAYS_SEND,
    receiver_country="NL",
)


def outbound() -> Transaction:
    return Transaction.outbound(
        id=uuid.UUID(int=10),
        org_id=ORG,
        ap=AP,
        document=DOCUMENT,
        sender_sp="PFC000001",
        created_ns=NS,
    )


def inbound() -> Transaction:
    return Transaction.inbound(
        id=uuid.UUID(int=11),
        org_id=ORG,
        ap=AP,
        document=DOCUMENT,
        sender_sp="POP123456",
        receiver_sp="PFC000001",
        message_id="m-1@peer",
        created_ns=NS,
    )


def positive_status(about: Transaction) -> Transaction:
    return Transaction.mls_about(
        DOCUMENT,
        id=uuid.UUID(int=12),
        org_id=ORG,
        ap=AP,
        spid="000001",
        sender_seat=about.sender_sp,
        response_code="AB",
        created_ns=NS,
        due=NOW + timedelta(minutes=10),
        about=about.id,
    )


def test_a_document_to_send_is_unprocessed_and_due_at_once() -> None:
    tx = outbound()
    assert (tx.direction, tx.kind, tx.transaction_status) == (
        Direction.TO_NETWORK,
        Kind.DOCUMENT,
        Status.UNPROCESSED,
    )
    assert tx.created_ns == NS and tx.created_at == NOW + timedelta(microseconds=123456)
    assert tx.next_attempt_at == tx.created_at and tx.lease_until == NO_LEASE
    assert (tx.sender_id, tx.receiver_id, tx.doc_instance_id) == (
        "0088:5790000000001",
        "0088:5790000000002",
        "doc-1",
    )
    assert (tx.mls_to, tx.mls_type) == ("iso6523-actorid-upis::0242:123456", "ALWAYS_SEND")
    assert (tx.ap_id, tx.sender_sp, tx.receiver_country) == (AP.id, "PFC000001", "NL")


def test_a_received_document_is_completed_and_never_sent() -> None:
    tx = inbound()
    assert (tx.direction, tx.transaction_status) == (Direction.FROM_NETWORK, Status.COMPLETED)
    assert (tx.as4_message_id, tx.sender_sp, tx.receiver_sp) == (
        "m-1@peer",
        "POP123456",
        "PFC000001",
    )
    with pytest.raises(IllegalTransition) as raised:
        tx.claimed(NOW, LEASE)
    assert raised.value.kind is ErrorKind.CONFLICT
    assert "a received document is not sent" in raised.value.message()


def test_a_status_about_a_received_document_goes_to_its_sender() -> None:
    received = inbound()
    job = positive_status(received)
    assert (job.kind, job.transaction_status, job.mls_response_code) == (
        Kind.MLS,
        Status.UNPROCESSED,
        "AB",
    )
    assert job.doc_type_id == str(MLS_DOCUMENT_TYPE) and job.about == received.id
    assert job.sender_id == "0242:000001" and job.receiver_sp == "POP123456"
    # MLS_TO names another provider than the sender's: the status goes to the sender's SPID
    assert job.receiver_id == "0242:123456" and job.next_attempt_at == NOW + timedelta(minutes=10)
    assert mls_receiver(DOCUMENT.mls_to, "POP654321") == "0242:654321"
    assert mls_receiver(None, "POP654321") == "0242:654321"
    # MLS_TO is taken only when it is a service provider id: 6 digits, optionally a use case
    # and a suffix (0242:654321-MLS_1.ap-2); otherwise the sender's SPID
    use_case = Identifier("iso6523-actorid-upis", "0242:654321-MLS_1.ap-2")
    assert mls_receiver(use_case, "POP654321") == "0242:654321-MLS_1.ap-2"
    for value in ("0242:6543210", "0242:654321x", "0242:654321-AB", "0242:654321-"):
        mls_to = Identifier("iso6523-actorid-upis", value)
        assert mls_receiver(mls_to, "POP654321") == "0242:654321", value


def test_a_rejection_is_made_with_a_reason_and_no_status_is_made_ap() -> None:
    with pytest.raises(IllegalTransition):
        Transaction.mls_about(
            DOCUMENT,
            id=uuid.UUID(int=13),
            org_id=ORG,
            ap=AP,
            spid="000001",
            sender_seat="POP123456",
            response_code="AP",
            created_ns=NS,
            due=NOW,
        )
    refusal = Transaction.mls_about(
        DOCUMENT,
        id=uuid.UUID(int=13),
        org_id=ORG,
        ap=AP,
        spid="000001",
        sender_seat="POP123456",
        response_code="RE",
        created_ns=NS,
        due=NOW,
        reason="SV",
        description="EBMS:0004 PEPPOL:NOT_SERVICED",
    )
    assert (refusal.mls_response_code, refusal.mls_reason, refusal.about) == ("RE", "SV", None)


def test_a_rejection_that_arrives_while_sending_stays() -> None:
    tx = outbound().claimed(NOW, LEASE).addressed("PFC000001", "POP123456", NOW)
    rejected = tx.mls_received("RE", "wrong VAT", NOW)
    assert rejected.service_error == REJECTED_BY_RECEIVER.error("wrong VAT")
    done = rejected.completed(NOW + timedelta(seconds=1))
    assert (done.transaction_status, done.service_error) == (
        Status.REJECTED,
        rejected.service_error,
    )
    assert done.lease_until == NO_LEASE and done.sending_over


def test_a_failure_that_cannot_be_mended_fails_at_once() -> None:
    tx = outbound().claimed(NOW, LEASE)
    refused = tx.attempt_failed(AP_REFUSED, "EBMS:0004", NOW, POLICY)
    assert (refused.transaction_status, refused.attempts) == (Status.FAILED, 1)
    assert refused.service_error == AP_REFUSED.error("EBMS:0004")
    unusable = tx.failed(SENDER_UNUSABLE.error("key altered"), NOW)
    assert (unusable.transaction_status, unusable.attempts) == (Status.FAILED, 0)


def test_a_transient_failure_is_retried_then_given_up() -> None:
    tx = outbound()
    for attempt, delay in ((1, timedelta(seconds=30)), (2, timedelta(minutes=5))):
        tx = tx.claimed(NOW, LEASE).attempt_failed(AP_UNREACHABLE, "timeout", NOW, POLICY)
        assert (tx.transaction_status, tx.attempts) == (Status.PROCESSING, attempt)
        assert tx.next_attempt_at == NOW + delay and tx.lease_until == NO_LEASE
        assert not tx.sending_over
    tx = tx.claimed(NOW, LEASE).attempt_failed(AP_UNREACHABLE, "timeout", NOW, POLICY)
    assert (tx.transaction_status, tx.attempts, tx.sending_over) == (Status.FAILED, 3, True)


def test_a_busy_receiver_delays_a_document_without_using_its_attempts_however_old_it_is() -> None:
    """A document first tried 20 minutes after it was made (a backlog after an outage, a long
    validation) and refused busy (503 with ``Retry-After: 120``): due again in 120 s (longer
    than the 30 s a failure waits), its attempts untouched, and its error says the receiver
    is busy and when the next attempt is. Busy refusals count only from the span of its
    retries (330 s) after the first one on, and the third counted one fails it."""
    asked = timedelta(seconds=120)
    tx = outbound()
    first = tx.created_at + timedelta(minutes=20)
    busy = tx.claimed(first, LEASE).attempt_failed(AP_BUSY, "HTTP 503", first, POLICY, asked=asked)
    assert (busy.transaction_status, busy.attempts, busy.busy_since) == (
        Status.PROCESSING,
        0,
        first,
    )
    assert busy.next_attempt_at == first + asked and busy.lease_until == NO_LEASE
    assert busy.service_error == AP_BUSY.error(
        "HTTP 503",
        lead=f"next attempt at {first + asked:%Y-%m-%dT%H:%M:%SZ}, not counted as an attempt",
    )
    assert busy.service_error.message.startswith("The receiving access point is busy: ")
    assert busy.service_error.message.endswith(", not counted as an attempt (HTTP 503)")
    at = busy.next_attempt_at
    busy = busy.claimed(at, LEASE).attempt_failed(AP_BUSY, "HTTP 503", at, POLICY)
    assert (busy.attempts, busy.busy_since) == (0, first)
    at = first + POLICY.span
    for attempt in (1, 2):
        busy = busy.claimed(at, LEASE).attempt_failed(AP_BUSY, "HTTP 429", at, POLICY)
        assert (busy.transaction_status, busy.attempts) == (Status.PROCESSING, attempt)
        assert f"{attempt} of its 3 attempts used (HTTP 429)" in busy.service_error.message
        assert busy.busy_since == first
        at = busy.next_attempt_at
    over = busy.claimed(at, LEASE).attempt_failed(AP_BUSY, "HTTP 429", at, POLICY)
    assert (over.transaction_status, over.attempts) == (Status.FAILED, 3)
    assert over.service_error == AP_BUSY.error("HTTP 429")


def test_a_failed_attempt_does_not_start_the_window_of_busy_refusals() -> None:
    """Only a busy refusal starts it: a document whose first attempt failed otherwise (an
    unreachable receiver) and that is refused busy later has that refusal not counted."""
    at = NOW
    tx = outbound().claimed(at, LEASE).attempt_failed(AP_UNREACHABLE, "timeout", at, POLICY)
    assert (tx.attempts, tx.busy_since) == (1, None)
    at += timedelta(minutes=10)
    tx = tx.claimed(at, LEASE).attempt_failed(AP_BUSY, "HTTP 503", at, POLICY)
    assert (tx.transaction_status, tx.attempts, tx.busy_since) == (Status.PROCESSING, 1, at)


policies = st.builds(
    RetryPolicy,
    st.lists(st.integers(0, 600).map(lambda s: timedelta(seconds=s)), min_size=1, max_size=3).map(
        tuple
    ),
    st.integers(1, 4),
)


@settings(deadline=None)
@given(
    policy=policies,
    age=st.integers(0, 7 * 86400).map(lambda s: timedelta(seconds=s)),
    # each outcome: a busy refusal (True) with the wait it asks, or another failure; the
    # worker comes that many seconds late to each due attempt
    outcomes=st.lists(
        st.tuples(
            st.booleans(), st.none() | st.integers(0, 7200).map(lambda s: timedelta(seconds=s))
        ),
        min_size=1,
        max_size=6,
    ),
    late=st.lists(st.integers(0, 120), min_size=1, max_size=6),
)
def test_busy_refusals_fail_no_document_before_the_window_of_its_first_one_has_passed(
    policy: RetryPolicy,
    age: timedelta,
    outcomes: list[tuple[bool, timedelta | None]],
    late: list[int],
) -> None:
    """However old a document is at its first attempt, a busy refusal within ``span`` of
    its first one uses no attempt and does not fail it; every other failure uses one; and a
    document whose every attempt fails still ends FAILED, its attempts used, within ``span``
    plus one longest wait per attempt of its first attempt."""
    tx = outbound()
    first = at = tx.created_at + age
    began: datetime | None = None  # its first busy refusal
    longest = max(*policy.delays, LONGEST_ASKED, SHORTEST_BUSY_WAIT) + timedelta(seconds=120)
    for (busy, asked), lateness in zip(itertools.cycle(outcomes), itertools.cycle(late)):
        before = tx.attempts
        failure = AP_BUSY if busy else AP_UNREACHABLE
        tx = tx.claimed(at, LEASE).attempt_failed(failure, "why", at, policy, asked=asked)
        if busy:
            began = began or at
            if at - began < policy.span:
                assert tx.attempts == before and not tx.sending_over
            else:
                assert tx.attempts == before + 1
        else:
            assert tx.attempts == before + 1
        assert tx.busy_since == began
        if tx.sending_over:
            break
        assert tx.next_attempt_at >= at
        at = tx.next_attempt_at + timedelta(seconds=lateness)
    assert (tx.transaction_status, tx.attempts) == (Status.FAILED, policy.max_attempts)
    assert at <= first + policy.span + policy.max_attempts * longest


def test_a_positive_status_is_confirmed_only_before_it_is_sent() -> None:
    job = positive_status(inbound())
    confirmed = job.confirmed(NOW)
    assert (confirmed.mls_response_code, confirmed.next_attempt_at) == ("AP", NOW)
    with pytest.raises(IllegalTransition, match="was sent already"):
        job.claimed(NOW, LEASE).confirmed(NOW)
    with pytest.raises(IllegalTransition):
        outbound().confirmed(NOW)


# --- the state machine ------------------------------------------------------------------------

# a transient failure and a busy receiver's refusal are picked most often: the machine meets
# them in an attempt, young and old
FAILURES = st.one_of(st.just(AP_UNREACHABLE), st.just(AP_BUSY), st.sampled_from(TXE_CATALOGUE))
# the document to send has the most states to visit: it is picked most often
RECORDS = st.sampled_from(["document", "document", "document", "document", "status", "received"])
SENDING = {"UNPROCESSED", "PROCESSING"}


@attrs.define
class Model:
    """What a record is, as plain values: the rules below say which moves it allows."""

    outbound: bool
    document: bool
    status: str
    attempts: int = 0
    code: str | None = None
    due: datetime | None = None
    leased: bool = False  # a worker holds it, in an attempt
    busy_since: datetime | None = None  # its first busy refusal

    def in_attempt(self) -> bool:
        return self.outbound and (
            self.status == "PROCESSING" or (self.status == "REJECTED" and self.leased)
        )


class Lifecycle(RuleBasedStateMachine):
    """Three records (a document to send, a positive status to send about a received
    document, the received document) moved by every transition at random moments; each move
    is allowed exactly when the model allows it, and then does what the model does."""

    def __init__(self) -> None:
        super().__init__()
        received = inbound()
        self.now = NOW
        self.records = {
            "document": outbound(),
            "status": positive_status(received),
            "received": received,
        }
        self.model = {
            "document": Model(True, True, "UNPROCESSED", due=self.records["document"].created_at),
            "status": Model(
                True, False, "UNPROCESSED", code="AB", due=self.records["status"].next_attempt_at
            ),
            "received": Model(False, True, "COMPLETED"),
        }

    def _try(self, which: str, allowed: bool, move: object) -> Transaction | None:
        try:
            after = move(self.records[which])  # type: ignore[operator]
        except IllegalTransition:
            assert not allowed, f"{which} refused a legal move"
            return None
        assert allowed, f"{which} made an illegal move"
        self.records[which] = after
        return after

    @rule(seconds=st.integers(0, 400))
    def time_passes(self, seconds: int) -> None:
        self.now += timedelta(seconds=seconds)

    @rule(which=RECORDS)
    def claim(self, which: str) -> None:
        m = self.model[which]
        after = self._try(
            which, m.outbound and m.status in SENDING, lambda t: t.claimed(self.now, LEASE)
        )
        if after is not None:
            m.status, m.leased = "PROCESSING", True
            assert after.lease_until == self.now + LEASE

    @rule(which=RECORDS)
    def address(self, which: str) -> None:
        m = self.model[which]
        after = self._try(
            which,
            m.in_attempt(),
            lambda t: t.addressed("PFC000001", "POP123456", self.now),
        )
        if after is not None:
            assert (after.sender_sp, after.receiver_sp) == ("PFC000001", "POP123456")

    @rule(which=RECORDS)
    def complete(self, which: str) -> None:
        m = self.model[which]
        if self._try(which, m.in_attempt(), lambda t: t.completed(self.now)):
            m.status = "REJECTED" if m.status == "REJECTED" else "COMPLETED"
            m.leased = False

    @rule(which=RECORDS)
    def cannot_send(self, which: str) -> None:
        m = self.model[which]
        error = SENDER_UNUSABLE.error("unusable")
        if self._try(which, m.in_attempt(), lambda t: t.failed(error, self.now)):
            m.status = "REJECTED" if m.status == "REJECTED" else "FAILED"
            m.leased = False

    @rule(
        which=RECORDS,
        failure=FAILURES,
        asked=st.none() | st.integers(0, 5000).map(lambda s: timedelta(seconds=s)),
    )
    def attempt_fails(self, which: str, failure: object, asked: timedelta | None) -> None:
        m = self.model[which]
        after = self._try(
            which,
            m.in_attempt(),
            lambda t: t.attempt_failed(failure, "why", self.now, POLICY, asked=asked),
        )
        if after is None:
            return
        # a busy refusal counts only from 330 s (the span of its retries) after the record's
        # first one on, however old the record is
        busy, counted = failure is AP_BUSY, True
        if busy:
            m.busy_since = began = m.busy_since or self.now
            counted = self.now - began >= timedelta(seconds=330)
        wait = timedelta(seconds=30) if m.attempts == 0 else timedelta(minutes=5)
        if busy and asked is not None:
            wait = max(wait, min(asked, LONGEST_ASKED))
        m.attempts, m.leased = m.attempts + counted, False
        retried = failure.retryable and m.attempts < 3  # type: ignore[attr-defined]
        if m.status == "REJECTED":
            pass
        elif retried:
            m.due = self.now + wait
        else:
            m.status = "FAILED"
        if m.status == "REJECTED":
            return
        lead = ""
        if busy and retried:  # it says when the next attempt is, and whether this one counted
            told = (
                f"{m.attempts} of its 3 attempts used" if counted else "not counted as an attempt"
            )
            lead = f"next attempt at {m.due:%Y-%m-%dT%H:%M:%SZ}, {told}"
            assert after.service_error.message.endswith(f"{lead} (why)")  # type: ignore[union-attr]
        assert after.service_error == failure.error("why", lead=lead)  # type: ignore[attr-defined]

    @rule(which=RECORDS, code=st.sampled_from(["AP", "AB", "RE"]))
    def status_arrives(self, which: str, code: str) -> None:
        m = self.model[which]
        allowed = m.outbound and m.document and m.status != "UNPROCESSED"
        if self._try(which, allowed, lambda t: t.mls_received(code, "because", self.now)):
            m.code = code
            if code == "RE":
                m.status = "REJECTED"

    @rule(which=RECORDS)
    def confirm(self, which: str) -> None:
        m = self.model[which]
        allowed = not m.document and m.code != "RE" and m.status == "UNPROCESSED" and not m.attempts
        if self._try(which, allowed, lambda t: t.confirmed(self.now)):
            m.code, m.due = "AP", self.now

    @invariant()
    def records_agree_with_the_model(self) -> None:
        for which, tx in self.records.items():
            m = self.model[which]
            assert tx.transaction_status.value == m.status, which
            assert (tx.attempts, tx.mls_response_code) == (m.attempts, m.code), which
            assert tx.busy_since == m.busy_since, which
            if m.outbound:
                assert tx.next_attempt_at == m.due, which

    @invariant()
    def a_finished_send_holds_no_lease_and_says_why_it_failed(self) -> None:
        for which, tx in self.records.items():
            # a lease is held exactly from a claim to the end of that attempt
            assert (tx.lease_until != NO_LEASE) == self.model[which].leased, which
            if tx.transaction_status in (Status.FAILED, Status.REJECTED):
                assert tx.service_error is not None
            if tx.transaction_status is Status.COMPLETED:
                assert tx.service_error is None
            if tx.transaction_status is Status.REJECTED:  # the receiver's verdict stays
                assert tx.service_error == REJECTED_BY_RECEIVER.error("because")
            assert tx.attempts <= POLICY.max_attempts


Lifecycle.TestCase.settings = settings(max_examples=400, stateful_step_count=40, deadline=None)
TestLifecycle = Lifecycle.TestCase


def received_from(seat: str, sender: str, instance: str = "doc-1", **more: str) -> Transaction:
    document = attrs.evolve(
        DOCUMENT,
        sender=Identifier("iso6523-actorid-upis", sender),
        instance_identifier=instance,
    )
    return Transaction.inbound(
        id=uuid.uuid4(),
        org_id=ORG,
        ap=AP,
        document=document,
        sender_sp=seat,
        receiver_sp="PFC000001",
        message_id=more.get("message_id", f"{uuid.uuid4()}@peer"),
        created_ns=NS,
    )


def test_a_received_document_is_the_same_only_from_the_same_sender() -> None:
    """An InstanceIdentifier is unique per sender only, and the sender chooses it: the key of
    a received document holds the access point that signed it and its SBDH sender, so another
    sender's document with the same identifier is another document; the same sender's, under
    another MessageId, is the same one (participants compare case-insensitively)."""
    first = received_from("POP123456", "0088:5790000000001")
    assert received_from("POP123456", "0088:5790000000001").dedup_key == first.dedup_key
    assert received_from("POP123456", "0088:5790000000001".upper()).dedup_key == first.dedup_key
    others = [
        received_from("POP777777", "0088:5790000000001"),  # another access point
        received_from("POP123456", "0088:5790000000009"),  # another sender it serves
        received_from("POP123456", "0088:5790000000001", instance="doc-2"),
    ]
    assert len({first.dedup_key, *(o.dedup_key for o in others)}) == 4
    # each part after its length: parts that hold the separator cannot pass for other parts
    assert (
        received_from("A:1", "0088:x", instance="y").dedup_key
        != received_from("A", "1:0088:x", instance="y").dedup_key
    )
    assert (
        received_from("A", "0088:x", instance="y").dedup_key
        != received_from("A", "0088", instance="x:y").dedup_key
    )


def test_records_stored_before_keep_their_key_and_sent_documents_theirs() -> None:
    """A record stored before the origin was kept reads back without one and keeps the key it
    was stored with; a document sent is keyed as ever (the intake finds a duplicate by it)."""
    old = attrs.evolve(inbound(), origin="")
    assert old.dedup_key == f"FROM_NETWORK:{ORG}:DOCUMENT:doc-1"
    assert inbound().dedup_key.startswith(f"FROM_NETWORK:{ORG}:DOCUMENT/")
    # no new key is an old one: the separator after the kind differs
    assert not inbound().dedup_key.startswith(f"FROM_NETWORK:{ORG}:DOCUMENT:")
    assert outbound().dedup_key == f"TO_NETWORK:{ORG}:DOCUMENT:doc-1"
    old_status = attrs.evolve(positive_status(inbound()), origin="")
    assert old_status.dedup_key == f"TO_NETWORK:{ORG}:MLS:doc-1"


def test_a_status_about_a_received_document_is_keyed_by_that_documents_sender() -> None:
    """The MLS this service sends about a document is keyed by who sent that document: a
    refusal of one sender's document does not stand for another's with the same identifier,
    while the same sender's document refused again is answered once. The key holds what the
    sending worker never changes (it records the receiving access point once looked up)."""

    def refusal(seat: str, sender: str) -> Transaction:
        return Transaction.mls_about(
            attrs.evolve(DOCUMENT, sender=Identifier("iso6523-actorid-upis", sender)),
            id=uuid.uuid4(),
            org_id=ORG,
            ap=AP,
            spid="000001",
            sender_seat=seat,
            response_code="RE",
            created_ns=NS,
            due=NOW,
            reason="FD",
        )

    hostile = refusal("POP777777", "0088:5790000000001")
    legit = refusal("POP123456", "0088:5790000000001")
    assert hostile.dedup_key != legit.dedup_key
    assert refusal("POP123456", "0088:5790000000001").dedup_key == legit.dedup_key
    sending = legit.claimed(NOW, LEASE).addressed("PFC000001", "POP999999", NOW)
    assert sending.dedup_key == legit.dedup_key
    assert (
        positive_status(inbound()).dedup_key
        != positive_status(received_from("POP777777", "0088:5790000000001")).dedup_key
    )


def test_a_received_message_is_known_by_its_sender_receiver_and_message_id() -> None:
    """``message_key``: a received document's AS4 message, whatever organisation took it in
    (its receiver may move to another between a message and its retry). The MessageId is the
    sender's to choose, so the key also holds the access point that signed it, the receiver
    and the access point it came in at: another sender's message with the same MessageId is
    another message."""
    message = received_from("POP123456", "0088:5790000000001", message_id="m-1@peer")
    key = message.message_key
    assert key is not None
    moved = attrs.evolve(message, id=uuid.uuid4(), org_id=uuid.UUID(int=99))
    assert moved.message_key == key  # a retry under another organisation: the same message
    same_document = received_from("POP123456", "0088:5790000000001", message_id="m-2@peer")
    others = [
        received_from("POP777777", "0088:5790000000001", message_id="m-1@peer"),
        same_document,
        attrs.evolve(message, receiver_id="0088:5790000000009"),
        attrs.evolve(message, ap_id=uuid.UUID(int=98)),
    ]
    assert len({key, *(o.message_key for o in others)}) == 5
    # each part after its length: parts that hold the separator cannot pass for other parts
    assert message_key_of(AP.id, "A/1:x", "y", "m") != message_key_of(AP.id, "A", "x/1:y", "m")
    assert message_key_of(AP.id, "A", "x/m", "n") != message_key_of(AP.id, "A", "x", "m/n")
    # no key: a document sent, a status to send, a record with no MessageId or sender
    assert outbound().message_key is None
    assert positive_status(inbound()).message_key is None
    assert attrs.evolve(message, as4_message_id="").message_key is None
    assert attrs.evolve(message, sender_sp="").message_key is None


def test_a_status_received_remembers_the_message_that_brought_it() -> None:
    """A sent document's status records its AS4 MessageId and signer: that message again is
    told from another status about the document."""
    tx = outbound().claimed(NOW, LEASE).addressed("PFC000001", "POP123456", NOW).completed(NOW)
    assert not tx.answered_by("mls-1@peer", "POP123456")
    for code in ("RE", "AB"):
        taken = tx.mls_received(code, "why", NOW, message_id="mls-1@peer", signer="POP123456")
        assert taken.answered_by("mls-1@peer", "POP123456")
        assert not taken.answered_by("mls-2@peer", "POP123456")
        assert not taken.answered_by("mls-1@peer", "POP777777")
    # one taken before the message was kept is answered by none
    assert not tx.mls_received("AB", "", NOW).answered_by("", "")


def test_a_refusal_of_an_earlier_copy_does_not_stand_in_the_way_of_a_positive_status() -> None:
    """A document refused (its RE queued, the document not stored) and then sent again with
    the same InstanceIdentifier, taken this time with ALWAYS_SEND: its AB is keyed by the
    document received, so it never clashes with the RE (a clash would make the unit of work
    that stores the document fail, and the document vanish under its receipt); two ABs of one
    received document still do."""
    document = inbound()
    refused = Transaction.mls_about(
        DOCUMENT,
        id=uuid.uuid4(),
        org_id=ORG,
        ap=AP,
        spid="000001",
        sender_seat=document.sender_sp,
        response_code="RE",
        created_ns=NS,
        due=NOW,
        reason="BV",
    )
    positive = positive_status(document)
    assert positive.dedup_key != refused.dedup_key
    assert positive_status(document).dedup_key == positive.dedup_key
    assert positive_status(attrs.evolve(document, id=uuid.uuid4())).dedup_key != positive.dedup_key
    # the key stays when the status is confirmed (AB becomes AP)
    assert attrs.evolve(positive, mls_response_code="AP").dedup_key == positive.dedup_key
