"""Time values as the interface writes them: UTC, ISO 8601 ending in ``Z`` with a fraction."""

from __future__ import annotations

from datetime import UTC, datetime


def utc(dt: datetime) -> datetime:
    """The same instant in UTC; a naive datetime is taken to be UTC already."""
    if dt.tzinfo is UTC:
        return dt
    if dt.tzinfo is None:
        return dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


def iso(dt: datetime) -> str:
    """``2026-01-02T10:00:00.123Z``: millisecond precision (truncated), UTC, ``Z``."""
    # isoformat of a UTC datetime ends in "+00:00"; it is several times faster than strftime
    return utc(dt).isoformat(timespec="milliseconds")[:-6] + "Z"


def sortable(dt: datetime) -> str:
    """A fixed-width microsecond UTC form whose string order is time order (for storage keys)."""
    return utc(dt).isoformat(timespec="microseconds")[:-6] + "Z"


def parse(text: str) -> datetime:
    """Parse an ISO 8601 timestamp; one without a zone is taken to be UTC."""
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    return utc(datetime.fromisoformat(value))


def iso_ns(ns: int) -> str:
    """``2026-01-02T10:00:00.123456789Z`` from nanoseconds since the epoch."""
    seconds, nanos = divmod(ns, 1_000_000_000)
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{nanos:09d}Z"


def from_ns(ns: int) -> datetime:
    return datetime.fromtimestamp(ns / 1_000_000_000, UTC)
