"""The retry policy of the outboxes: how many attempts a job gets, and how long it waits
between them. Sending a document and delivering a webhook event follow it alike."""

from __future__ import annotations

from datetime import datetime, timedelta

import attrs


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
        return at + self.delays[min(failed - 1, len(self.delays) - 1)]
