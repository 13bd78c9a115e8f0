"""Transactions: documents sent to the network (corner 2) or received from it (corner 3),
and the message level statuses this service sends about documents it received.

A transaction's life is its methods. One to send (``outbound``, or ``mls_about``) is made
UNPROCESSED; the sending worker ``claimed`` it (PROCESSING, under a lease), records the
parties it is ``addressed`` between, and ends the attempt ``completed``, ``attempt_failed``
(retried by the ``RetryPolicy`` or FAILED) or ``failed`` (nothing could be attempted). A
received document (``inbound``) is COMPLETED when made. A message level status about a sent
document is ``mls_received`` (code RE: REJECTED, which the worker's end of an attempt keeps);
a positive status waiting for the receiving organisation is ``confirmed`` (AB becomes AP). Any
other move raises ``IllegalTransition``.
"""

from __future__ import annotations

import enum
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs

from fourcorner.domain.clock import from_ns
from fourcorner.domain.envelope import (
    MLS_DOCUMENT_TYPE,
    MLS_PROCESS,
    SPID,
    SPID_SCHEME,
    Identifier,
    Sbdh,
    seat_spid,
    spid_participant,
)
from fourcorner.domain.errors import IllegalTransition
from fourcorner.domain.network_services import AccessPoint
from fourcorner.domain.retry import RetryPolicy
from fourcorner.domain.send_failures import REJECTED_BY_RECEIVER, ServiceError, TransportFailure
from fourcorner.domain.webhook import NO_LEASE


class Direction(enum.Enum):
    TO_NETWORK = "TO_NETWORK"
    FROM_NETWORK = "FROM_NETWORK"


class Status(enum.Enum):
    UNPROCESSED = "UNPROCESSED"
    PROCESSING = "PROCESSING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    REJECTED = "REJECTED"


class Kind(enum.Enum):
    DOCUMENT = "DOCUMENT"
    MLS = "MLS"  # a message level status this service sends about a document it received


class ArtefactType(enum.Enum):
    BUSINESS_DOCUMENT = "BUSINESS_DOCUMENT"
    VALIDATION_RESULT = "VALIDATION_RESULT"
    TRANSACTION_RECEIPT = "TRANSACTION_RECEIPT"
    MLS = "MLS"


@attrs.frozen
class Transaction:
    id: uuid.UUID
    org_id: uuid.UUID
    direction: Direction
    ap_id: uuid.UUID
    transport_profile: str
    sender_id: str
    receiver_id: str
    doc_type_id: str  # the document type as "<scheme>::<value>"
    process_id: str  # "<scheme>::<value>"
    sender_country: str
    doc_instance_id: str
    transaction_status: Status
    created_at: datetime
    created_ns: int  # the creation time in nanoseconds since the epoch
    last_modified_at: datetime
    kind: Kind = Kind.DOCUMENT
    receiver_country: str = ""
    sender_sp: str = ""
    receiver_sp: str = ""
    as4_message_id: str = ""
    attempts: int = 0
    # for a document or status to send: when its receiving access point first refused it as
    # busy, where the window of busy refusals that use up no attempt begins; None: never (so
    # far, or in a record stored before it was kept)
    busy_since: datetime | None = None
    next_attempt_at: datetime = NO_LEASE
    lease_until: datetime = NO_LEASE
    service_error: ServiceError | None = None
    mls_response_code: str | None = None
    mls_to: str = ""  # where a message level status about this document goes
    mls_type: str = ""
    # for an MLS this service sends with code RE: why (status reason code and description)
    mls_reason: str = ""
    mls_description: str = ""
    # its line responses, when it names more than one problem: (line id, i.e. an XPath or
    # NA; status reason code; description); none: one line of ``mls_reason``
    mls_lines: tuple[tuple[str, str, str], ...] = ()
    # for an MLS this service sends: the transaction (received document) it is about
    about: uuid.UUID | None = None
    # who a received document came from (``origin_of``: its sending access point and SBDH
    # sender), or the document an MLS this service sends is about; empty for a sent document
    # and for a record stored before it was kept, whose key stays as it was stored
    origin: str = ""
    # for a sent document: the AS4 message that brought the status it has (its MessageId and
    # the CN of the certificate that signed it), so that message again is told from another
    mls_message_id: str = ""
    mls_signer: str = ""

    @property
    def dedup_key(self) -> str:
        """What no two records share: a document's SBDH InstanceIdentifier in its direction,
        organisation and kind. The identifier is unique only per sender, who chooses it, so a
        received document's key (and the key of an MLS about one) also holds its ``origin``:
        another sender's document with the same identifier is another document; the positive
        status (AB) of a received document is keyed by that document (``about``), so a
        refusal (RE) of an earlier copy with the same identifier, which was not stored, does
        not stand in its way (nor make the document it comes with vanish). The separator after
        the kind tells the form apart from that of a record stored before (where ``:`` follows
        it), which keeps its key."""
        head = f"{self.direction.value}:{self.org_id}:{self.kind.value}"
        if not self.origin:
            return f"{head}:{self.doc_instance_id}"
        if self.kind is Kind.MLS and self.about is not None:
            # the positive status of one received document: that document's own, so a refusal
            # of an earlier copy (not stored, its RE keyed as below) never clashes with it
            return f"{head}/{self.origin}#{self.about}"
        return f"{head}/{self.origin}:{self.doc_instance_id}"

    @property
    def message_key(self) -> str | None:
        """What no two received records share: the AS4 message that brought a received
        document (``message_key_of``), whatever organisation took it in; None for a record no
        AS4 message of a known sender brought (a document sent, a status to send)."""
        if self.direction is not Direction.FROM_NETWORK:
            return None
        return message_key_of(self.ap_id, self.sender_sp, self.receiver_id, self.as4_message_id)

    def answered_by(self, message_id: str, signer: str) -> bool:
        """Whether the status this sent document has came in the AS4 message ``message_id``
        signed by ``signer`` (a replay of it is answered as the first was)."""
        return (
            self.mls_response_code is not None
            and bool(self.mls_message_id)
            and self.mls_message_id == message_id
            and self.mls_signer == signer
        )

    # --- made -------------------------------------------------------------------------------

    @classmethod
    def outbound(
        cls,
        *,
        id: uuid.UUID,
        org_id: uuid.UUID,
        ap: AccessPoint,
        document: Sbdh,
        sender_sp: str,
        created_ns: int,
    ) -> Transaction:
        """A document to send through ``ap``, due at once; ``sender_sp``: the sending access
        point's seat id (the receiving one's is known once looked up)."""
        return cls._of_document(
            Direction.TO_NETWORK,
            Status.UNPROCESSED,
            id,
            org_id,
            ap,
            document,
            created_ns,
            sender_sp=sender_sp,
            next_attempt_at=from_ns(created_ns),
        )

    @classmethod
    def inbound(
        cls,
        *,
        id: uuid.UUID,
        org_id: uuid.UUID,
        ap: AccessPoint,
        document: Sbdh,
        sender_sp: str,
        receiver_sp: str,
        message_id: str,
        created_ns: int,
    ) -> Transaction:
        """A document received at ``ap`` in the AS4 message ``message_id``: COMPLETED."""
        return cls._of_document(
            Direction.FROM_NETWORK,
            Status.COMPLETED,
            id,
            org_id,
            ap,
            document,
            created_ns,
            sender_sp=sender_sp,
            receiver_sp=receiver_sp,
            as4_message_id=message_id,
            origin=origin_of(sender_sp, document.sender),
        )

    @classmethod
    def _of_document(
        cls,
        direction: Direction,
        status: Status,
        id: uuid.UUID,
        org_id: uuid.UUID,
        ap: AccessPoint,
        document: Sbdh,
        created_ns: int,
        **more: Any,
    ) -> Transaction:
        now = from_ns(created_ns)
        return cls(
            id=id,
            org_id=org_id,
            direction=direction,
            ap_id=ap.id,
            transport_profile=ap.transport_profile,
            sender_id=document.sender.value,
            receiver_id=document.receiver.value,
            doc_type_id=str(document.document_type),
            process_id=str(document.process),
            sender_country=document.country_c1,
            receiver_country=document.receiver_country,
            doc_instance_id=document.instance_identifier,
            transaction_status=status,
            created_at=now,
            created_ns=created_ns,
            last_modified_at=now,
            mls_to=str(document.mls_to) if document.mls_to else "",
            mls_type=document.mls_type.value if document.mls_type else "",
            **more,
        )

    @classmethod
    def mls_about(
        cls,
        document: Sbdh,
        *,
        id: uuid.UUID,
        org_id: uuid.UUID,
        ap: AccessPoint,
        spid: str,
        sender_seat: str,
        response_code: str,
        created_ns: int,
        due: datetime,
        about: uuid.UUID | None = None,
        reason: str = "",
        description: str = "",
        lines: tuple[tuple[str, str, str], ...] = (),
        seat: str = "",
    ) -> Transaction:
        """A message level status about ``document`` (received at ``ap``, of this service
        provider ``spid``, from the access point whose seat id is ``sender_seat``) to send
        back to its sender from ``due``: AB (``about``: the received transaction), or RE for
        a document refused (``reason``: the status reason code, with ``description``; ``lines``:
        its line responses, when there is more than one). ``seat``: this access point's seat
        id, the status's sender party, recorded with the receiver's from the start (the
        access point the document came from): a send to that access point records no
        parties of its own."""
        if response_code not in ("AB", "RE") or (response_code == "RE") != bool(reason):
            raise IllegalTransition(
                record="message level status",
                state="new",
                move=f"made with response code {response_code}",
                reason="one is made AB, or RE with a reason",
            )
        now = from_ns(created_ns)
        return cls(
            id=id,
            org_id=org_id,
            direction=Direction.TO_NETWORK,
            kind=Kind.MLS,
            ap_id=ap.id,
            transport_profile=ap.transport_profile,
            sender_id=spid_participant(spid).value,
            receiver_id=mls_receiver(document.mls_to, sender_seat),
            doc_type_id=str(MLS_DOCUMENT_TYPE),
            process_id=str(MLS_PROCESS),
            sender_country=document.country_c1,
            doc_instance_id=document.instance_identifier,
            transaction_status=Status.UNPROCESSED,
            created_at=now,
            created_ns=created_ns,
            last_modified_at=now,
            next_attempt_at=due,
            sender_sp=seat,
            receiver_sp=sender_seat,
            about=about,
            origin=origin_of(sender_seat, document.sender),
            mls_response_code=response_code,
            mls_reason=reason,
            mls_description=description,
            mls_lines=lines,
        )

    # --- sent -------------------------------------------------------------------------------

    def claimed(self, now: datetime, lease: timedelta) -> Transaction:
        """Taken by a sending worker until ``now + lease`` (again, when an earlier worker's
        lease ran out)."""
        self._sending("claimed", Status.UNPROCESSED, Status.PROCESSING)
        return attrs.evolve(
            self,
            transaction_status=Status.PROCESSING,
            lease_until=now + lease,
            last_modified_at=now,
        )

    def addressed(self, sender_sp: str, receiver_sp: str, now: datetime) -> Transaction:
        """The seat ids of the access points it goes between, recorded before it is posted (a
        status about it is matched on them)."""
        self._in_attempt("addressed")
        return attrs.evolve(
            self, sender_sp=sender_sp, receiver_sp=receiver_sp, last_modified_at=now
        )

    def completed(self, now: datetime) -> Transaction:
        """Delivered: COMPLETED, or still REJECTED when the receiver's status came first."""
        self._in_attempt("completed")
        return self._over(Status.COMPLETED, None, now)

    def failed(self, error: ServiceError, now: datetime) -> Transaction:
        """FAILED before anything could be attempted (the sending access point is unusable)."""
        self._in_attempt("failed")
        return self._over(Status.FAILED, error, now)

    def attempt_failed(
        self,
        failure: TransportFailure,
        detail: str,
        now: datetime,
        policy: RetryPolicy,
        *,
        asked: timedelta | None = None,
    ) -> Transaction:
        """An attempt failed with ``failure``: due again when ``policy`` retries it (still
        PROCESSING, no lease), else FAILED. A rejected document is not tried again.

        A busy receiver's refusal (``failure.busy``; ``asked``: the wait its ``Retry-After``
        asks for) is retried as ``RetryPolicy.after_busy`` says, from its first busy refusal
        (``busy_since``, this one when it is the first): not counted for ``policy.span``
        from then, however long the document waited before it was first tried, and due no
        sooner than asked; its error says so, and when the next attempt is."""
        self._in_attempt("given a failed attempt")
        busy_since = self.busy_since
        if failure.busy:
            busy_since = now if busy_since is None else busy_since
            failed, retry_at = policy.after_busy(self.attempts, now, since=busy_since, asked=asked)
        else:
            failed = self.attempts + 1
            retry_at = policy.next_attempt(failed, now, retryable=failure.retryable)
        tried = attrs.evolve(self, attempts=failed, busy_since=busy_since)
        if retry_at is None or self.transaction_status is Status.REJECTED:
            return tried._over(Status.FAILED, failure.error(detail), now)
        lead = ""
        if failure.busy:
            counted = f"{failed} of its {policy.max_attempts} attempts used"
            if failed == self.attempts:
                counted = "not counted as an attempt"
            lead = f"next attempt at {retry_at.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}, {counted}"
        return attrs.evolve(
            tried,
            next_attempt_at=retry_at,
            lease_until=NO_LEASE,
            service_error=failure.error(detail, lead=lead),
            last_modified_at=now,
        )

    @property
    def sending_over(self) -> bool:
        """Whether the sending of it has ended (nothing is tried again)."""
        return self.transaction_status not in (Status.UNPROCESSED, Status.PROCESSING)

    # --- message level status ---------------------------------------------------------------

    def mls_received(
        self,
        response_code: str,
        description: str,
        now: datetime,
        *,
        message_id: str = "",
        signer: str = "",
    ) -> Transaction:
        """The receiver's status about this sent document, which came in the AS4 message
        ``message_id`` signed by ``signer``: RE rejects it (whatever the worker does after); AP
        and AB are recorded."""
        if (
            self.direction is not Direction.TO_NETWORK
            or self.kind is not Kind.DOCUMENT
            or self.transaction_status is Status.UNPROCESSED
        ):
            raise self._illegal("given a message level status", "only a sent document has one")
        if response_code != "RE":
            return attrs.evolve(
                self,
                mls_response_code=response_code,
                mls_message_id=message_id,
                mls_signer=signer,
                last_modified_at=now,
            )
        return attrs.evolve(
            self,
            mls_response_code=response_code,
            mls_message_id=message_id,
            mls_signer=signer,
            transaction_status=Status.REJECTED,
            service_error=REJECTED_BY_RECEIVER.error(description),
            last_modified_at=now,
        )

    def confirmed(self, now: datetime) -> Transaction:
        """The receiving organisation confirmed the document a positive status waits for: it
        goes out at once as AP."""
        if self.kind is not Kind.MLS or self.mls_response_code == "RE":
            raise self._illegal("confirmed", "only a positive message level status waits for it")
        if self.transaction_status is not Status.UNPROCESSED or self.attempts:
            raise self._illegal(
                "confirmed", "the message level status about this document was sent already"
            )
        return attrs.evolve(self, mls_response_code="AP", next_attempt_at=now, last_modified_at=now)

    # --- rules ------------------------------------------------------------------------------

    def _in_attempt(self, move: str) -> None:
        """A move of the worker that claimed it: while PROCESSING, or REJECTED by a status that
        arrived during the attempt (the worker still holds its lease)."""
        if self.transaction_status is Status.REJECTED and self.lease_until == NO_LEASE:
            raise self._illegal(move, "the send of a rejected document is over")
        self._sending(move, Status.PROCESSING, Status.REJECTED)

    def _sending(self, move: str, *allowed: Status) -> None:
        if self.direction is not Direction.TO_NETWORK:
            raise self._illegal(move, "a received document is not sent")
        if self.transaction_status not in allowed:
            raise self._illegal(move, "only when " + " or ".join(s.value for s in allowed))

    def _over(self, status: Status, error: ServiceError | None, now: datetime) -> Transaction:
        if self.transaction_status is Status.REJECTED:  # the receiver's verdict stays
            status, error = Status.REJECTED, self.service_error
        return attrs.evolve(
            self,
            transaction_status=status,
            service_error=error,
            lease_until=NO_LEASE,
            last_modified_at=now,
        )

    def _illegal(self, move: str, reason: str) -> IllegalTransition:
        what = "message level status" if self.kind is Kind.MLS else "transaction"
        return IllegalTransition(
            record=f"{what} {self.id}",
            state=self.transaction_status.value,
            move=move,
            reason=reason,
        )


def origin_of(sender_seat: str, sender: Identifier) -> str:
    """Who sent a received document, as its dedup key holds it: the seat id of the access
    point that signed it (its certificate's CN, which the receive path authenticates) and its
    SBDH sender (case-insensitively, as participants compare); each after its length, so no
    two pairs read alike whatever they hold."""
    participant = f"{sender.scheme}::{sender.value}".lower()
    return f"{len(sender_seat)}:{sender_seat}:{len(participant)}:{participant}"


def message_key_of(
    ap_id: uuid.UUID, sender_seat: str, receiver_id: str, message_id: str
) -> str | None:
    """The identity of an AS4 message received at access point ``ap_id``, independent of the
    organisation its receiver belongs to: the access point that signed it (``sender_seat``,
    its certificate's CN, which the receive path authenticates), the receiver it is for (as
    its SBDH names it) and its MessageId. A message again (a retry) has the same key, even
    after its receiver moved to another organisation; the MessageId is the sender's to
    choose, so the sender is part of the key: no access point can make its message pass for
    another's. The seat and the receiver each come after their length, so no parts read like
    others whatever they hold. None without a MessageId or a sender (nothing to tell a
    message by)."""
    if not message_id or not sender_seat:
        return None
    seat = f"{len(sender_seat)}:{sender_seat}"
    return f"{ap_id}/{seat}/{len(receiver_id)}:{receiver_id}/{message_id}"


def mls_receiver(mls_to: Identifier | None, sender_seat: str) -> str:
    """Where a message level status about a document goes: its MLS_TO when that names the
    sending service provider (its 6-digit main id equals the sender's seat id digits), else
    ``0242:<sender SPID>``."""
    c2 = seat_spid(sender_seat)
    scheme, _, spid = mls_to.value.partition(":") if mls_to is not None else ("", "", "")
    if scheme == SPID_SCHEME and SPID.fullmatch(spid) and spid[:6].upper() == c2.upper():
        return f"{SPID_SCHEME}:{spid}"
    return spid_participant(c2).value


@attrs.frozen
class Artefact:
    id: uuid.UUID
    transaction_id: uuid.UUID
    org_id: uuid.UUID
    type: ArtefactType
    content_type: str
    size: int
    blob: str  # the blob store's key
    created_at: datetime


@attrs.frozen
class UsedUpload:
    """A pre-signed upload URL that has been used (they are single-use)."""

    id: uuid.UUID
    created_at: datetime
