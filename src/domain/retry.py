"""The retry policy of the outboxes: how many attempts a job gets, and how long it waits
between them. Sending a document and delivering a webhook event follow it alike, a receiver
that is busy too (``RetryPolicy.after_busy``)."""

from __future__ import annotations

from datetime import datetime, timedelta

import attrs

LONGEST_ASKED = timedelta(hours=1)
"""The longest wait a busy receiver's ``Retry-After`` is followed for: one asking for more is
tried again after an hour (and refused again if it is still busy), so a mistaken or hostile
value cannot hold a document for days."""
SHORTEST_BUSY_WAIT = timedelta(seconds=1)
"""The least a busy refusal waits, whatever the delays and ``Retry-After`` say: a policy with
a delay of 0 (or a receiver asking for 0) must not send again and again to a receiver that
said it is busy, for nothing counted."""


def _some_delay(
    _policy: object,
    _attribute: attrs.Attribute[tuple[timedelta, ...]],
    delays: tuple[timedelta, ...],
) -> None:
    if not delays:
        raise ValueError("a retry policy waits some delay between attempts")


@attrs.frozen
class RetryPolicy:
    """At most ``max_attempts`` attempts; after failed attempt ``n`` the next one waits
    ``delays[n - 1]`` (the last delay when there are fewer delays than attempts)."""

    delays: tuple[timedelta, ...] = attrs.field(
        default=(timedelta(seconds=30), timedelta(minutes=5)), validator=_some_delay
    )
    max_attempts: int = 3

    def next_attempt(self, failed: int, at: datetime, *, retryable: bool = True) -> datetime | None:
        """When the next attempt is due after ``failed`` (≥ 1) failed attempts, the last one at
        ``at``; None when the job is given up (it was the last attempt, or a failure that
        trying again cannot mend)."""
        if not retryable or failed >= self.max_attempts:
            return None
        return at + self._delay(failed)

    @property
    def span(self) -> timedelta:
        """What the waits between the attempts add up to when each fails: from the first
        attempt to the last (330 s for the default policy)."""
        return sum((self._delay(n) for n in range(1, self.max_attempts)), timedelta(0))

    def after_busy(
        self, failed: int, at: datetime, *, since: datetime, asked: timedelta | None = None
    ) -> tuple[int, datetime | None]:
        """A busy refusal at ``at`` (the receiver answered HTTP 503 or 429: it cannot take the
        message now, come back later) of a job first refused busy at ``since`` (``at`` itself
        for the first) that had ``failed`` failed attempts: the failed attempts it has after
        it, and when the next one is due (None: given up).

        It is not counted for ``span`` after the job's first busy refusal: a receiver that is
        busy for a while delays a document, it does not fail it, whenever that document was
        first tried (a backlog after an outage, or one that waited long before it was due, is
        refused as a new one is); a refusal about a message already taken in loses nothing
        either, as every retry posts the same message, whose receipt the receiver keeps. From
        ``span`` on it counts as any failure does, so a receiver that is busy for good fails
        the job after its attempts, in bounded time: within ``span`` of the first busy refusal
        plus ``max_attempts`` waits, each at most the longest delay or ``LONGEST_ASKED``. The next
        attempt waits ``busy_wait`` (``asked``: the receiver's ``Retry-After``)."""
        counted = failed + 1 if at - since >= self.span else failed
        if counted >= self.max_attempts:
            return counted, None
        return counted, at + self.busy_wait(failed, asked)

    def busy_wait(self, failed: int, asked: timedelta | None = None) -> timedelta:
        """How long a busy refusal of a job with ``failed`` failed attempts waits: what a
        failed attempt would (the delay after ``failed + 1`` failures), or what the receiver
        asked (``asked``: at most ``LONGEST_ASKED``) when that is longer, and never less than
        ``SHORTEST_BUSY_WAIT``."""
        wait = max(self._delay(failed + 1), SHORTEST_BUSY_WAIT)
        if asked is not None:
            wait = max(wait, min(asked, LONGEST_ASKED))
        return wait

    def _delay(self, failed: int) -> timedelta:
        """The wait after ``failed`` (≥ 1) failed attempts."""
        return self.delays[min(failed - 1, len(self.delays) - 1)]
