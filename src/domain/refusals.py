"""The errors of requests a business rule refuses (422), of callers that try too often (429)
and of the service when something it needs is unavailable (503). Part of the error catalogue
(``domain.errors``, which exports them too)."""

from __future__ import annotations

import attrs

from fourcorner.domain.errors import Detail, DomainError, ErrorKind
from fourcorner.domain.validation import FailedAssert

# --- 422: a business rule refused the request -----------------------------------------------


@attrs.define(eq=False, slots=False)
class ModeChangeNeedsBusinessContact(DomainError):
    code = "AT-1120"
    kind = ErrorKind.RULE
    title = "Mode change needs a BUSINESS contact"
    org_id: str = ""

    def message(self) -> str:
        return (
            "A mode change can be requested, stay pending or be granted only while the "
            "organisation has a BUSINESS contact: add one, or withdraw the request "
            "(modeChangeRequest null)."
        )


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


@attrs.define(eq=False, slots=False)
class DocumentInvalid(DomainError):
    """A billing document that fails fatal validation rules, refused at intake (the
    organisation's ``validation`` setting is ``refuse``): each failed rule is a detail."""

    code = "AT-1131"
    kind = ErrorKind.RULE
    title = "The document fails the validation rules"
    failed: tuple[FailedAssert, ...] = ()

    def message(self) -> str:
        rules = ", ".join(dict.fromkeys(f.id for f in self.failed))
        return f"The document fails {len(self.failed)} fatal validation rule(s): {rules}."

    def details(self) -> list[Detail]:
        return [Detail(f.location, f.text, rule=f.id) for f in self.failed]

    def members(self) -> dict[str, str]:
        return {"category": "VALIDATION_ERROR", "action": "FIX_AND_RETRY"}


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
class ConcurrentChange(ServiceUnavailable):
    """A change that met another one made at the same time (the database broke a deadlock
    between their transactions, or could not serialise them) and was rolled back: a transient
    conflict, not an outage, which the same request will most likely pass when sent again.
    Answered with ``Retry-After`` (``retry_after``, whole seconds)."""

    code = "AT-1507"
    title = "A concurrent change conflicted"
    reason: str = "in the database"  # where, or how, they met
    retry_after: int = 1

    def message(self) -> str:
        return (
            f"A change made at the same time conflicted with this one {self.reason}; "
            f"try again in {self.retry_after} second{'s' if self.retry_after != 1 else ''}."
        )


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
class LocatorUnavailable(DomainError):
    """The network's SML could not be reached for a change that cannot wait for a retry."""

    code = "AT-1503"
    kind = ErrorKind.UNAVAILABLE
    title = "The SML cannot be reached"
    reason: str = "the SML did not answer"

    def message(self) -> str:
        return f"The network's SML cannot be reached: {self.reason}. Try again shortly."
