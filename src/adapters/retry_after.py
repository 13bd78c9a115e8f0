"""Reading a peer's ``Retry-After`` (RFC 9110 §10.2.3): how long it asks to be left alone.

The value is delta-seconds (``120``) or an HTTP-date (``Fri, 02 Jan 2026 10:02:00 GMT``,
or one of the two obsolete forms a recipient must still read, §5.6.7); a date is a wait from
``now``, this service's clock (a peer's clock that is off shifts it; the wait is bounded
anyway). A value that reads as neither is ignored (the caller waits as it would without
one), a date in the past is a wait of 0, and no wait is longer than ``LONGEST_ASKED``: the
caller's policy decides what it does with the wait, this only reads it. Read by the AS4
sender and the webhook sender alike, on the answers that say the peer is busy (``BUSY``).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime

from fourcorner.domain.retry import LONGEST_ASKED

# The answers of a peer that cannot take a message now (503: overloaded or down for
# maintenance, as this service's own AT-1504; 429: too many requests): busy, come back later,
# after its Retry-After when it gives one (``RetryPolicy.after_busy``).
BUSY = frozenset({429, 503})

_SECONDS = re.compile(r"[0-9]+")  # 1*DIGIT: no sign, no fraction, ASCII digits only
# more digits than this is more than LONGEST_ASKED, not a number to convert
_MOST_DIGITS = len(str(int(LONGEST_ASKED.total_seconds())))


def asked_wait(value: str | None, now: datetime) -> timedelta | None:
    """The wait the ``Retry-After`` value ``value`` asks for from ``now``, at most
    ``LONGEST_ASKED``; None when there is none or it does not read."""
    if value is None:
        return None
    value = value.strip(" \t")
    if _SECONDS.fullmatch(value):
        if len(value.lstrip("0")) > _MOST_DIGITS:
            return LONGEST_ASKED
        return min(timedelta(seconds=int(value)), LONGEST_ASKED)
    try:
        at = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if at.tzinfo is None:  # "-0000" or no zone: an HTTP-date is always in GMT
        at = at.replace(tzinfo=UTC)
    return min(max(at - now, timedelta(0)), LONGEST_ASKED)
