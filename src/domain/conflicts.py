"""The errors of requests that conflict with the stored state (409): duplicates, resources in
use, changes that would leave an organisation without an orgadmin. Part of the error catalogue
(``domain.errors``, which exports them too)."""

from __future__ import annotations

import attrs

from fourcorner.domain.errors import Detail, DomainError, ErrorKind

# --- 409: conflicts with the stored state ---------------------------------------------------


@attrs.define(eq=False, slots=False)
class Conflict(DomainError):
    code = "AT-1090"
    kind = ErrorKind.CONFLICT
    title = "Conflict"
    reason: str = "the resource already exists"

    def message(self) -> str:
        return f"Conflict: {self.reason}."


@attrs.define(eq=False, slots=False)
class DuplicateOrganisation(DomainError):
    code = "AT-1091"
    kind = ErrorKind.CONFLICT
    title = "Organisation exists"
    legal_identifier_code: str = ""
    legal_identifier: str = ""

    def message(self) -> str:
        return (
            "An organisation with legal identifier "
            f"{self.legal_identifier_code} {self.legal_identifier} already exists."
        )


@attrs.define(eq=False, slots=False)
class AlreadyMember(DomainError):
    code = "AT-1092"
    kind = ErrorKind.CONFLICT
    title = "Already a member"
    user_id: str = ""

    def message(self) -> str:
        return f"User {self.user_id} is already a member of, or waiting to join, the organisation."


@attrs.define(eq=False, slots=False)
class LastOrgAdmin(DomainError):
    code = "AT-1093"
    kind = ErrorKind.CONFLICT
    title = "Last orgadmin"
    org_id: str = ""  # named when the change is not to one organisation (a user's deletion)

    def message(self) -> str:
        text = "An organisation keeps at least one orgadmin; this change would remove the last"
        return f"{text} of organisation {self.org_id}." if self.org_id else f"{text}."


@attrs.define(eq=False, slots=False)
class NoModeChangePending(DomainError):
    code = "AT-1094"
    kind = ErrorKind.CONFLICT
    title = "No mode change request pending"

    def message(self) -> str:
        return "The organisation mode changes only while a mode change request is pending."


@attrs.define(eq=False, slots=False)
class InUse(DomainError):
    code = "AT-1095"
    kind = ErrorKind.CONFLICT
    title = "Resource in use"
    resource: str = ""
    ident: str = ""
    used_by: str = ""

    def message(self) -> str:
        return f"The {self.resource} {self.ident} is in use by {self.used_by}."


@attrs.define(eq=False, slots=False)
class NotPending(DomainError):
    code = "AT-1096"
    kind = ErrorKind.CONFLICT
    title = "Not pending"
    member_id: str = ""

    def message(self) -> str:
        return f"Member {self.member_id} has no pending request to join."


@attrs.define(eq=False, slots=False)
class CertificateKeyInUse(DomainError):
    """A certificate whose public key is registered already: by the service operator (its own
    access point and SMP certificates), by another organisation, or by this one."""

    code = "AT-1097"
    kind = ErrorKind.CONFLICT
    title = "Certificate key already registered"
    holder: str = "another certificate"

    def message(self) -> str:
        return (
            f"A certificate with this public key is registered already, by {self.holder}; "
            "a key is registered once."
        )

    def details(self) -> list[Detail]:
        return [Detail("$.certPem", f"its public key is registered already, by {self.holder}")]


@attrs.define(eq=False, slots=False)
class DuplicateTransaction(DomainError):
    """A document whose instance identifier this organisation has sent already; the body
    names that transaction (``transactionId``)."""

    code = "AT-1100"
    kind = ErrorKind.CONFLICT
    title = "Document sent already"
    transaction_id: str = ""
    doc_instance_id: str = ""

    def message(self) -> str:
        return (
            f"A document with instance identifier {self.doc_instance_id} was sent already, "
            f"as transaction {self.transaction_id}."
        )

    def members(self) -> dict[str, str]:
        return {"transactionId": self.transaction_id}


@attrs.define(eq=False, slots=False)
class IdempotencyKeyReused(DomainError):
    code = "AT-1101"
    kind = ErrorKind.CONFLICT
    title = "Idempotency key used for another request"

    def message(self) -> str:
        return (
            "This Idempotency-Key was used in the last 24 hours for a different request "
            "(another body or access point); use a new key for a new request."
        )


@attrs.define(eq=False, slots=False)
class NothingToRedeliver(DomainError):
    code = "AT-1102"
    kind = ErrorKind.CONFLICT
    title = "No webhook to redeliver to"
    event_id: str = ""

    def message(self) -> str:
        return (
            f"Event {self.event_id} was delivered to no webhook that still exists and is "
            "enabled; there is nothing to redeliver it to."
        )


@attrs.define(eq=False, slots=False)
class TooManyWebhooks(DomainError):
    """An organisation with as many webhooks as it may have (``webhook.MAX_WEBHOOKS``) makes
    another: every event goes to each of them, so without a bound one request (a test event)
    could make any number of deliveries."""

    code = "AT-1106"
    kind = ErrorKind.CONFLICT
    title = "Too many webhooks"
    limit: int = 0

    def message(self) -> str:
        return (
            f"The organisation has {self.limit} webhooks, as many as it may have; delete one "
            "before making another."
        )


@attrs.define(eq=False, slots=False)
class TooManyDeliveries(DomainError):
    """A redelivery that would give an event more deliveries than it keeps
    (``webhook.MAX_DELIVERIES``): each is kept on the event, whose record is written whole
    with every attempt of each."""

    code = "AT-1107"
    kind = ErrorKind.CONFLICT
    title = "Too many deliveries of the event"
    event_id: str = ""
    limit: int = 0
    kept: int = 0  # the deliveries it has
    asked: int = 0  # the deliveries the redelivery would add

    def message(self) -> str:
        return (
            f"Event {self.event_id} has {self.kept} deliveries, and keeps at most "
            f"{self.limit}: redelivering it to {self.asked} webhook"
            f"{'s' if self.asked != 1 else ''} would make {self.kept + self.asked}. "
            "It was not redelivered."
        )


@attrs.define(eq=False, slots=False)
class IllegalTransition(DomainError):
    """A record asked to move to a state its life cycle does not allow from the one it is in
    (a transaction completed twice, a status confirmed after it was sent)."""

    code = "AT-1103"
    kind = ErrorKind.CONFLICT
    title = "Not allowed in the record's current state"
    record: str = "record"
    state: str = ""
    move: str = ""
    reason: str = ""

    def message(self) -> str:
        because = f": {self.reason}" if self.reason else ""
        return f"The {self.record} ({self.state}) cannot be {self.move}{because}."


@attrs.define(eq=False, slots=False)
class LocatorRefused(DomainError):
    """The network's SML refused a registration, a migration or a migration key."""

    code = "AT-1104"
    kind = ErrorKind.CONFLICT
    title = "Refused by the SML"
    reason: str = ""

    def message(self) -> str:
        return f"The network's SML refused this: {self.reason}."


@attrs.define(eq=False, slots=False)
class RegisteredElsewhere(DomainError):
    """The network's SML has the participant registered by another SMP."""

    code = "AT-1105"
    kind = ErrorKind.CONFLICT
    title = "Participant registered by another SMP"
    participant: str = ""
    environment: str = ""
    detail: str = ""

    def message(self) -> str:
        said = f" (the SML said: {self.detail})" if self.detail else ""
        return (
            f"The participant {self.participant} is registered in the {self.environment} SML "
            f"by another SMP{said}. To move it here, ask its current provider for a migration "
            "key (they prepare the move in the SML) and create the participant again with "
            "that key as migrationKey."
        )
