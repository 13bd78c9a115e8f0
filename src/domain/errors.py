"""The error catalogue: every error the service reports, with its stable code.

Each error is a plain exception carrying data. Its ``kind`` says what sort of refusal it is;
the HTTP edge maps kinds to status codes (see ``entrypoints.http.errors``). Codes are stable
once released; ``AT-1018`` and ``AT-1120`` are fixed by the interface specification.
"""

from __future__ import annotations

import enum
from typing import ClassVar

import attrs


class ErrorKind(enum.Enum):
    INVALID = "invalid"  # 400
    UNAUTHORISED = "unauthorised"  # 401
    FORBIDDEN = "forbidden"  # 403
    NOT_FOUND = "not_found"  # 404
    METHOD_NOT_ALLOWED = "method_not_allowed"  # 405
    CONFLICT = "conflict"  # 409
    TOO_LARGE = "too_large"  # 413
    UNSUPPORTED_MEDIA = "unsupported_media"  # 415
    RULE = "rule"  # 422
    TOO_MANY = "too_many"  # 429
    UNAVAILABLE = "unavailable"  # 503
    INTERNAL = "internal"  # 500


@attrs.frozen
class Detail:
    """One problem with one part of the input; ``field`` is a JSON path (``$.contacts[0]``)."""

    field: str
    problem: str


@attrs.define(eq=False, slots=False)
class DomainError(Exception):
    """Base of every error of the catalogue."""

    code: ClassVar[str] = "AT-1599"
    kind: ClassVar[ErrorKind] = ErrorKind.INTERNAL
    title: ClassVar[str] = "Internal error"

    def message(self) -> str:
        return self.title

    def details(self) -> list[Detail]:
        return []

    def members(self) -> dict[str, str]:
        """Members the error body carries beside ``code``, ``error`` and ``details``."""
        return {}

    def __str__(self) -> str:
        return f"{self.code}: {self.message()}"


# --- 400: the input is malformed ---------------------------------------------------------


@attrs.define(eq=False, slots=False)
class MalformedBody(DomainError):
    code = "AT-1000"
    kind = ErrorKind.INVALID
    title = "The request body is not well-formed"
    reason: str = "the body is not valid JSON"

    def message(self) -> str:
        return f"The request body is not well-formed: {self.reason}."


@attrs.define(eq=False, slots=False)
class InvalidInput(DomainError):
    code = "AT-1001"
    kind = ErrorKind.INVALID
    title = "The request has invalid fields"
    problems: list[Detail] = attrs.field(factory=list)

    def message(self) -> str:
        if len(self.problems) == 1:
            p = self.problems[0]
            return f"Invalid value at {p.field}: {p.problem}."
        return f"The request has {len(self.problems)} invalid fields."

    def details(self) -> list[Detail]:
        return list(self.problems)

    @classmethod
    def one(cls, field: str, problem: str) -> InvalidInput:
        return cls([Detail(field, problem)])


@attrs.define(eq=False, slots=False)
class InvalidFilter(DomainError):
    code = "AT-1004"
    kind = ErrorKind.INVALID
    title = "Invalid filter"
    expression: str = ""
    reason: str = ""

    def message(self) -> str:
        return f"Invalid filter {self.expression!r}: {self.reason}."

    def details(self) -> list[Detail]:
        return [Detail("filter", f"{self.expression}: {self.reason}")]


@attrs.define(eq=False, slots=False)
class InvalidCursor(DomainError):
    code = "AT-1005"
    kind = ErrorKind.INVALID
    title = "Invalid cursor"

    def message(self) -> str:
        return "The cursor is not one this service issued for this list."


@attrs.define(eq=False, slots=False)
class InvalidIdentifier(DomainError):
    """A participant or legal identifier broke a rule of its scheme ("0088: check digit ...")."""

    code = "AT-1006"
    kind = ErrorKind.INVALID
    title = "Invalid identifier"
    value: str = ""
    rule: str = ""
    field: str = "participantIdentifier"

    def message(self) -> str:
        return f"Invalid identifier {self.value!r}: {self.rule}."

    def details(self) -> list[Detail]:
        return [Detail(f"$.{self.field}", self.rule)]


# --- 401 / 403: who is calling, and may they -----------------------------------------------


@attrs.define(eq=False, slots=False)
class Unauthorised(DomainError):
    code = "AT-1018"
    kind = ErrorKind.UNAUTHORISED
    title = "Unauthorised"
    reason: str = "no valid credentials were presented"

    def message(self) -> str:
        return f"Unauthorised: {self.reason}."


@attrs.define(eq=False, slots=False)
class RoleNotPermitted(DomainError):
    code = "AT-1019"
    kind = ErrorKind.FORBIDDEN
    title = "Role not permitted"
    required: str = ""
    held: str = ""

    def message(self) -> str:
        return f"This operation needs the role {self.required}; the caller has {self.held}."


@attrs.define(eq=False, slots=False)
class NotAMember(DomainError):
    code = "AT-1020"
    kind = ErrorKind.FORBIDDEN
    title = "Not a member of the organisation"
    org_id: str = ""

    def message(self) -> str:
        return "The caller is not a member of this organisation."


@attrs.define(eq=False, slots=False)
class ModeNotPermitted(DomainError):
    code = "AT-1021"
    kind = ErrorKind.FORBIDDEN
    title = "Not allowed in the organisation's mode"
    mode: str = ""
    action: str = ""

    def message(self) -> str:
        return f"An organisation in mode {self.mode} may not {self.action}."


@attrs.define(eq=False, slots=False)
class Forbidden(DomainError):
    code = "AT-1022"
    kind = ErrorKind.FORBIDDEN
    title = "Forbidden"
    reason: str = ""

    def message(self) -> str:
        return f"Forbidden: {self.reason}."


# --- 404 / 405 ------------------------------------------------------------------------------


@attrs.define(eq=False, slots=False)
class NotFound(DomainError):
    code = "AT-1040"
    kind = ErrorKind.NOT_FOUND
    title = "Not found"
    resource: str = "resource"
    ident: str = ""

    def message(self) -> str:
        return f"No {self.resource} with id {self.ident!r}."


@attrs.define(eq=False, slots=False)
class RouteNotFound(DomainError):
    code = "AT-1041"
    kind = ErrorKind.NOT_FOUND
    title = "No such route"
    path: str = ""

    def message(self) -> str:
        return f"No route matches {self.path!r}."


@attrs.define(eq=False, slots=False)
class MethodNotAllowed(DomainError):
    code = "AT-1042"
    kind = ErrorKind.METHOD_NOT_ALLOWED
    title = "Method not allowed"
    method: str = ""
    allowed: tuple[str, ...] = ()  # the methods the route serves

    def message(self) -> str:
        return f"Method {self.method} is not allowed on this route."


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

    def message(self) -> str:
        return "An organisation keeps at least one orgadmin; this change would remove the last."


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


# --- 413 / 415 ------------------------------------------------------------------------------


@attrs.define(eq=False, slots=False)
class BodyTooLarge(DomainError):
    code = "AT-1002"
    kind = ErrorKind.TOO_LARGE
    title = "Body too large"
    limit: int = 0

    def message(self) -> str:
        return f"The request body is larger than the limit of {self.limit} bytes."


@attrs.define(eq=False, slots=False)
class UnsupportedMediaType(DomainError):
    code = "AT-1003"
    kind = ErrorKind.UNSUPPORTED_MEDIA
    title = "Unsupported media type"
    got: str = ""
    expected: str = "application/json"

    def message(self) -> str:
        return f"Content type {self.got or '(none)'} is not accepted here; send {self.expected}."


# --- 422: a business rule refused the request -----------------------------------------------


@attrs.define(eq=False, slots=False)
class ModeChangeNeedsBusinessContact(DomainError):
    code = "AT-1120"
    kind = ErrorKind.RULE
    title = "Mode change needs a BUSINESS contact"
    org_id: str = ""

    def message(self) -> str:
        return "A mode change can be requested only when the organisation has a BUSINESS contact."


@attrs.define(eq=False, slots=False)
class ModeChangeToCurrentMode(DomainError):
    code = "AT-1121"
    kind = ErrorKind.RULE
    title = "Mode change to the current mode"
    mode: str = ""

    def message(self) -> str:
        return f"The organisation is already in mode {self.mode}."


@attrs.define(eq=False, slots=False)
class RoleAboveCreator(DomainError):
    code = "AT-1122"
    kind = ErrorKind.RULE
    title = "Role above the creator's"
    requested: str = ""
    held: str = ""

    def message(self) -> str:
        return (
            f"An API key cannot carry role {self.requested}, above its creator's role {self.held}."
        )


@attrs.define(eq=False, slots=False)
class ExpiryInPast(DomainError):
    code = "AT-1123"
    kind = ErrorKind.RULE
    title = "Expiry in the past"

    def message(self) -> str:
        return "The expiry time of an API key must lie in the future."


@attrs.define(eq=False, slots=False)
class RulesFailed(DomainError):
    """The validation rules raised an error on the document instead of a verdict."""

    code = "AT-1130"
    kind = ErrorKind.RULE
    title = "The validation rules could not be run on the document"
    reason: str = ""

    def message(self) -> str:
        return f"The validation rules could not be run on the document: {self.reason}."


# --- 429 ------------------------------------------------------------------------------------


@attrs.define(eq=False, slots=False)
class TooManyFailedAttempts(DomainError):
    """Too many failed authentications from one client address or for one API key prefix;
    ``retry_after`` is in whole seconds."""

    code = "AT-1029"
    kind = ErrorKind.TOO_MANY
    title = "Too many failed authentication attempts"
    retry_after: int = 1

    def message(self) -> str:
        return (
            "Too many failed authentication attempts; "
            f"try again in {self.retry_after} second{'s' if self.retry_after != 1 else ''}."
        )


# --- 503 ------------------------------------------------------------------------------------


@attrs.define(eq=False, slots=False)
class ServiceUnavailable(DomainError):
    code = "AT-1500"
    kind = ErrorKind.UNAVAILABLE
    title = "Service unavailable"
    reason: str = "the database cannot be reached"

    def message(self) -> str:
        return f"The service is unavailable: {self.reason}. Try again shortly."


@attrs.define(eq=False, slots=False)
class SecretUnusable(DomainError):
    """A secret stored for a record (a certificate's private key, a webhook's signing secret)
    does not open: it was altered, copied from another record, or sealed under another at-rest
    key. What needs it cannot be used until the secret is stored again."""

    code = "AT-1501"
    kind = ErrorKind.UNAVAILABLE
    title = "A stored secret cannot be used"
    user: str = ""  # what cannot be used, e.g. "access point <id>"
    secret: str = ""  # e.g. "the private key of certificate <id>"
    reason: str = ""

    def message(self) -> str:
        return f"The {self.user} cannot be used: {self.secret} is unusable ({self.reason})."


@attrs.define(eq=False, slots=False)
class LookupUnavailable(DomainError):
    """The network could not be asked about a receiver: its DNS or SMP did not answer."""

    code = "AT-1502"
    kind = ErrorKind.UNAVAILABLE
    title = "The network lookup failed"
    reason: str = "the receiver's SMP cannot be reached"

    def message(self) -> str:
        return f"The network lookup failed: {self.reason}. Try again shortly."


@attrs.define(eq=False, slots=False)
class RegisteredElsewhere(DomainError):
    """The network's SML has the participant registered by another SMP."""

    code = "AT-1103"
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
class LocatorUnavailable(DomainError):
    """The network's SML could not be reached for a change that cannot wait for a retry."""

    code = "AT-1503"
    kind = ErrorKind.UNAVAILABLE
    title = "The SML cannot be reached"
    reason: str = "the SML did not answer"

    def message(self) -> str:
        return f"The network's SML cannot be reached: {self.reason}. Try again shortly."


def catalogue() -> list[type[DomainError]]:
    """Every error class with its code, for the OpenAPI document and the docs."""
    seen: list[type[DomainError]] = []
    stack: list[type[DomainError]] = [DomainError]
    while stack:
        cls = stack.pop()
        seen.append(cls)
        stack.extend(cls.__subclasses__())
    return sorted(seen, key=lambda c: c.code)
