"""The error catalogue: every error the service reports, with its stable code.

Each error is a plain exception carrying data. Its ``kind`` says what sort of refusal it is;
the HTTP edge maps kinds to status codes (``entrypoints.http.openapi.status_of``). This module
holds the base class and the errors of input, access and look-up; the others live by area in
``domain.conflicts`` (409) and ``domain.refusals`` (422, 429, 503) and are exported from here
too. Errors of the HTTP protocol itself (no such route, wrong method, body too large or of the
wrong type) belong to the HTTP edge: ``entrypoints.http.errors``. Codes are stable
once released; ``AT-1018`` and ``AT-1120`` are fixed by the interface specification.
"""

from __future__ import annotations

import enum
from typing import ClassVar

import attrs

from fourcorner.domain.text import quoted


class ErrorKind(enum.Enum):
    INVALID = "invalid"  # 400
    UNAUTHORISED = "unauthorised"  # 401
    FORBIDDEN = "forbidden"  # 403
    NOT_FOUND = "not_found"  # 404
    METHOD_NOT_ALLOWED = "method_not_allowed"  # 405
    CONFLICT = "conflict"  # 409
    TOO_LARGE = "too_large"  # 413
    UNSUPPORTED_MEDIA = "unsupported_media"  # 415
    EXPECTATION_FAILED = "expectation_failed"  # 417
    RULE = "rule"  # 422
    TOO_MANY = "too_many"  # 429
    UNAVAILABLE = "unavailable"  # 503
    VERSION_NOT_SUPPORTED = "version_not_supported"  # 505
    INTERNAL = "internal"  # 500


@attrs.frozen
class Detail:
    """One problem with one part of the input; ``field`` is a JSON path (``$.contacts[0]``),
    or, for a failed validation rule (``rule``: its id), the XPath where it failed."""

    field: str
    problem: str
    rule: str | None = None


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
        return f"Invalid filter {quoted(self.expression)}: {self.reason}."

    def details(self) -> list[Detail]:
        return [Detail("filter", f"{quoted(self.expression)}: {self.reason}")]


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
    in_query: bool = False  # ``field`` names a query parameter, not a member of the body

    def message(self) -> str:
        return f"Invalid identifier {quoted(self.value)}: {self.rule}."

    def details(self) -> list[Detail]:
        return [Detail(self.field if self.in_query else f"$.{self.field}", self.rule)]


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


# --- 404 ------------------------------------------------------------------------------------


@attrs.define(eq=False, slots=False)
class NotFound(DomainError):
    code = "AT-1040"
    kind = ErrorKind.NOT_FOUND
    title = "Not found"
    resource: str = "resource"
    ident: str = ""
    # what is missing, said whole, where the id given is not the missing record's own
    missing: str = ""

    def message(self) -> str:
        if self.missing:
            return f"{self.missing}."
        return f"No {self.resource} with id {quoted(self.ident)}."


def catalogue() -> list[type[DomainError]]:
    """Every error class with its code, for the OpenAPI document and the docs."""
    seen: list[type[DomainError]] = []
    stack: list[type[DomainError]] = [DomainError]
    while stack:
        cls = stack.pop()
        seen.append(cls)
        stack.extend(cls.__subclasses__())
    return sorted(seen, key=lambda c: c.code)


# the rest of the catalogue, by area (imported last: they build on the classes above)
from fourcorner.domain.conflicts import (  # noqa: E402
    AlreadyMember,
    CertificateKeyInUse,
    Conflict,
    DuplicateOrganisation,
    DuplicateTransaction,
    IdempotencyKeyReused,
    IllegalTransition,
    InUse,
    LastOrgAdmin,
    LocatorRefused,
    NoModeChangePending,
    NothingToRedeliver,
    NotPending,
    RegisteredElsewhere,
    TooManyDeliveries,
    TooManyWebhooks,
)
from fourcorner.domain.refusals import (  # noqa: E402
    ConcurrentChange,
    DocumentInvalid,
    ExpiryInPast,
    LocatorUnavailable,
    LookupUnavailable,
    ModeChangeNeedsBusinessContact,
    ModeChangeToCurrentMode,
    RoleAboveCreator,
    RulesFailed,
    SecretUnusable,
    ServiceUnavailable,
    TooManyFailedAttempts,
)

__all__ = [
    "AlreadyMember",
    "CertificateKeyInUse",
    "ConcurrentChange",
    "Conflict",
    "Detail",
    "DocumentInvalid",
    "DomainError",
    "DuplicateOrganisation",
    "DuplicateTransaction",
    "ErrorKind",
    "ExpiryInPast",
    "Forbidden",
    "IdempotencyKeyReused",
    "IllegalTransition",
    "InUse",
    "InvalidCursor",
    "InvalidFilter",
    "InvalidIdentifier",
    "InvalidInput",
    "LastOrgAdmin",
    "LocatorRefused",
    "LocatorUnavailable",
    "LookupUnavailable",
    "MalformedBody",
    "ModeChangeNeedsBusinessContact",
    "ModeChangeToCurrentMode",
    "ModeNotPermitted",
    "NoModeChangePending",
    "NotAMember",
    "NotFound",
    "NotPending",
    "NothingToRedeliver",
    "RegisteredElsewhere",
    "RoleAboveCreator",
    "RoleNotPermitted",
    "RulesFailed",
    "SecretUnusable",
    "ServiceUnavailable",
    "TooManyDeliveries",
    "TooManyFailedAttempts",
    "TooManyWebhooks",
    "Unauthorised",
    "catalogue",
]
