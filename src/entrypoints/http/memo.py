"""What a request computed from reads of the record cache alone, kept for the next one.

An entry is answered again only while the storage's ``read_stamp`` is the one taken before
the reads that made it (no commit has since changed a cached collection, here or, as far as
this process has heard, in another process) and for ``STAMP_MAX_AGE`` seconds at most; a
``None`` stamp (no record cache, or one switched off) keeps nothing. Callers check what else
an entry depends on (a token's or key's expiry) themselves.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from fourcorner.application.storage import STAMP_MAX_AGE

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class StampedMemo(Generic[K, V]):
    """At most ``max_entries`` entries (all dropped when full: a full table means many
    callers, and a cleared one costs one miss each)."""

    def __init__(
        self,
        *,
        max_entries: int = 10_000,
        max_age: float = STAMP_MAX_AGE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._entries: dict[K, tuple[Hashable, float, V]] = {}
        self._max = max_entries
        self._max_age = min(max_age, STAMP_MAX_AGE)
        self._clock = clock

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: K, stamp: Hashable | None) -> V | None:
        if stamp is None:
            return None
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[0] != stamp or entry[1] <= self._clock():
            del self._entries[key]
            return None
        return entry[2]

    def put(self, key: K, value: V, stamp: Hashable | None) -> None:
        """``stamp``: the one taken before the reads that ``value`` comes from."""
        if stamp is None:
            return
        if len(self._entries) >= self._max:
            self._entries.clear()
        self._entries[key] = (stamp, self._clock() + self._max_age, value)
