"""Time values as the interface writes them: UTC, ISO 8601 ending in ``Z`` with a fraction."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


class OutOfRange(ValueError):
    """A time whose instant lies outside the years 1 to 9999 in UTC, so it has no UTC value
    (``9999-12-31T23:59:59-14:00`` is an instant of the year 10000)."""


RANGE = "from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z"
"""The instants a timestamp may name, as a problem text says it."""


def utc(dt: datetime) -> datetime:
    """The same instant in UTC; a naive datetime is taken to be UTC already. ``OutOfRange``
    for an instant that UTC cannot hold (a time near the years' limits, with an offset)."""
    if dt.tzinfo is UTC:
        return dt
    if dt.tzinfo is None:
        return dt.replace(tzinfo=UTC)
    try:
        return dt.astimezone(UTC)
    except OverflowError:
        raise OutOfRange(
            f"{dt.isoformat()} is outside the instants a timestamp names, {RANGE}"
        ) from None


def iso(dt: datetime) -> str:
    """``2026-01-02T10:00:00.123Z``: millisecond precision (truncated), UTC, ``Z``."""
    # isoformat of a UTC datetime ends in "+00:00"; it is several times faster than strftime
    return utc(dt).isoformat(timespec="milliseconds")[:-6] + "Z"


SORTABLE_DIGITS = 6  # fraction digits of ``sortable``
SORTABLE_FRACTION = len("2026-01-02T10:00:00.")  # where the fraction of ``sortable`` starts


def sortable(dt: datetime) -> str:
    """A fixed-width microsecond UTC form whose string order is time order (for storage keys)."""
    return utc(dt).isoformat(timespec="microseconds")[:-6] + "Z"


def coarsen(text: str, digits: int) -> str:
    """A ``sortable`` text cut to ``digits`` fraction digits, still in the sortable form
    (``…00.123456Z`` → ``…00.123000Z`` for 3): the time as shown at that precision."""
    keep = SORTABLE_FRACTION + digits
    return text[:keep] + "0" * (SORTABLE_DIGITS - digits) + "Z"


class NoZone(ValueError):
    """A time without a zone (``2027-12-31T00:00:00``) where one is required."""


def parse(text: str, *, zoned: bool = False) -> datetime:
    """Parse an ISO 8601 timestamp; one without a zone is taken to be UTC, or, ``zoned``,
    refused (``NoZone``). ``ValueError`` for text that is no timestamp, ``OutOfRange`` (one)
    for an instant outside UTC's years."""
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    moment = datetime.fromisoformat(value)
    if zoned and moment.tzinfo is None:
        raise NoZone(f"{text!r} has no zone")
    return utc(moment)


def iso_ns(ns: int) -> str:
    """``2026-01-02T10:00:00.123456789Z`` from nanoseconds since the epoch."""
    seconds, nanos = divmod(ns, 1_000_000_000)
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{nanos:09d}Z"


def from_ns(ns: int) -> datetime:
    """The instant ``ns`` cut to microseconds (exactly: no rounding through a float)."""
    seconds, nanos = divmod(ns, 1_000_000_000)
    return datetime.fromtimestamp(seconds, UTC) + timedelta(microseconds=nanos // 1000)
