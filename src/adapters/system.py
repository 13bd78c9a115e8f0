"""The system's clock and random ids: what the composition root gives the use cases as their
clock and id ports (``application.context.Context``). Tests give others."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime


def system_clock() -> datetime:
    """Now, in UTC."""
    return datetime.now(UTC)


def system_clock_ns() -> int:
    """Now, in nanoseconds since the epoch (a transaction's creation stamp)."""
    return time.time_ns()


def random_id() -> uuid.UUID:
    return uuid.uuid4()
