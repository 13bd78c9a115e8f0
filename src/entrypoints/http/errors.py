"""Errors of the HTTP protocol itself: no route, a method the route does not serve, an
expectation it does not meet, a body too large or of a type the route does not read, too many
requests in flight from one address, too many documents checked by hand at once. They are
part of the error catalogue (codes and kinds like the domain's, ``domain.errors.catalogue``)
but no use case raises them."""

from __future__ import annotations

from typing import Self

import attrs
from aiohttp import hdrs, web

from fourcorner.domain import errors
from fourcorner.domain.errors import DomainError, ErrorKind
from fourcorner.domain.text import quoted


@attrs.define(eq=False, slots=False)
class RouteNotFound(DomainError):
    code = "AT-1041"
    kind = ErrorKind.NOT_FOUND
    title = "No such route"
    path: str = ""

    def message(self) -> str:
        return f"No route matches {quoted(self.path)}."


@attrs.define(eq=False, slots=False)
class MethodNotAllowed(DomainError):
    code = "AT-1042"
    kind = ErrorKind.METHOD_NOT_ALLOWED
    title = "Method not allowed"
    method: str = ""
    allowed: tuple[str, ...] = ()  # the methods the route serves

    def message(self) -> str:
        return f"Method {self.method} is not allowed on this route."


@attrs.define(eq=False, slots=False)
class ExpectationFailed(DomainError):
    """An ``Expect`` header other than ``100-continue`` (RFC 9110, 10.1.1): answered before the
    body is read, whatever the route."""

    code = "AT-1043"
    kind = ErrorKind.EXPECTATION_FAILED
    title = "Expectation failed"
    expect: str = ""

    def message(self) -> str:
        return f"The expectation {quoted(self.expect)} is not supported; only 100-continue is."


@attrs.define(eq=False, slots=False)
class VersionNotSupported(DomainError):
    """A request line naming an HTTP version other than 1.0 and 1.1, which this server speaks
    (RFC 9110, 15.6.6): ``HTTP/2.0`` or ``HTTP/0.9`` in an HTTP/1 request line is no request it
    can read as its sender meant it. Answered before the body is read, whatever the route."""

    code = "AT-1044"
    kind = ErrorKind.VERSION_NOT_SUPPORTED
    title = "HTTP version not supported"
    version: str = ""

    def message(self) -> str:
        return f"HTTP/{self.version} is not supported; this server speaks HTTP/1.1 and HTTP/1.0."


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

    @classmethod
    def of(cls, request: web.BaseRequest, expected: str = "application/json") -> Self:
        """The refusal of ``request``'s body, naming the type it was sent with: aiohttp reads
        a missing or empty Content-Type as application/octet-stream, which was not sent."""
        sent = request.headers.get(hdrs.CONTENT_TYPE, "").strip()
        return cls(got=request.content_type if sent else "", expected=expected)


@attrs.define(eq=False, slots=False)
class AddressBusy(DomainError):
    """One more inbound AS4 message from a client address that has as many in flight as it may
    have at once (``FOURCORNER_AS4_INBOUND_PER_ADDRESS``, ``address_limit``): refused before
    its body is read, as a temporary failure (503, which an AS4 sender tries again), with
    ``Retry-After`` (``retry_after``, whole seconds)."""

    code = "AT-1504"
    kind = ErrorKind.UNAVAILABLE
    title = "Too many messages in flight from this address"
    limit: int = 0
    retry_after: int = 1
    large: bool = False  # the count of large messages on disk (``spool_share``)

    def message(self) -> str:
        what = "large messages on disk" if self.large else "messages in flight"
        return (
            f"This address has {self.limit} {what} already, as many as it may have "
            f"at once; send this one again in {self.retry_after} "
            f"second{'s' if self.retry_after != 1 else ''}."
        )


@attrs.define(eq=False, slots=False)
class ValidationBusy(DomainError):
    """One more ``POST /validation`` while this process checks as many documents for it as it
    may at once (``validation_handlers.Checks``): refused at once, as a temporary failure (503),
    with ``Retry-After`` (``retry_after``, whole seconds)."""

    code = "AT-1505"
    kind = ErrorKind.UNAVAILABLE
    title = "Too many validations at once"
    limit: int = 1
    retry_after: int = 5

    def message(self) -> str:
        what = "a document" if self.limit == 1 else f"{self.limit} documents"
        return (
            f"The service is checking {what} for /validation already, as many as it checks "
            f"at once; send this one again in {self.retry_after} "
            f"second{'s' if self.retry_after != 1 else ''}."
        )


@attrs.define(eq=False, slots=False)
class TooManyTestEvents(DomainError):
    """One more ``POST .../webhooks/trigger-test-event`` from an organisation that has raised as
    many test events as it may in the last minute (``webhook_handlers.TriggerTurns``): each goes
    to every webhook subscribed to it (up to 100), so without a bound one request a time would
    be a hundred sent to the addresses its webhooks name. ``retry_after``: whole seconds."""

    code = "AT-1030"
    kind = ErrorKind.TOO_MANY
    title = "Too many test events"
    per_minute: int = 0
    retry_after: int = 1

    def message(self) -> str:
        return (
            f"This organisation has raised {self.per_minute} test "
            f"event{'s' if self.per_minute != 1 else ''} in the last minute, "
            f"as many as it may; try again in {self.retry_after} "
            f"second{'s' if self.retry_after != 1 else ''}."
        )


@attrs.define(eq=False, slots=False)
class TooManyConnections(DomainError):
    """A new connection from a client address that has as many open as it may have at once
    (``FOURCORNER_HTTP_CONNECTIONS_PER_ADDRESS``, ``connections``): answered as it opens,
    before any request is read, and closed, with ``Retry-After`` (written by
    ``ConnectionLimit.refusal``: no operation answers it, so it is not in ``RETRIED``)."""

    code = "AT-1506"
    kind = ErrorKind.UNAVAILABLE
    title = "Too many connections from this address"
    limit: int = 0
    retry_after: int = 1

    def message(self) -> str:
        return (
            f"This address has {self.limit} connections open already, as many as it may have "
            f"at once; use those, or connect again in {self.retry_after} "
            f"second{'s' if self.retry_after != 1 else ''}."
        )


RETRIED = (
    errors.TooManyFailedAttempts,
    errors.ConcurrentChange,
    AddressBusy,
    ValidationBusy,
    TooManyTestEvents,
)
"""The errors answered with a ``Retry-After`` header: their ``retry_after``."""


def catalogue() -> list[type[DomainError]]:
    """Every error the interface answers with, by code: the domain's and the protocol's above
    (``domain.errors.catalogue`` finds every subclass loaded; this module loads these)."""
    return errors.catalogue()
