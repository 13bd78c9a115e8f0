"""Committed records of a few collections, kept in process memory for units of work that read.

Every request reads the same handful of small records before it does anything: the caller's
user record, their membership, the organisation, its certificates, an API key; every document
sent or received reads its participants, the access points and SMPs it goes through, the
receiver's SMP registration and, for its events, its organisation's webhooks. On PostgreSQL
each read is a round trip and about 120 µs of driver work in this process, more than the rest
of the request; these records change rarely. So ``Storage.reader()`` units of work answer
``get``/``first``/``all`` on the collections named here from this cache, by the statement's SQL
and parameters, and fill it on a miss. Units of work that write never read from it.

Staying correct:

- Only committed data enters: a reader's miss runs outside any transaction (PostgreSQL: its
  own autocommit connection; SQLite: holding the unit-of-work lock, so no transaction of this
  process is open on the shared connection).
- Every commit that wrote one of these collections clears it (``invalidate``) here, and tells
  the other processes: PostgreSQL sends a ``NOTIFY`` in the committing transaction, which each
  process's listener turns into ``invalidate``; SQLite compares ``PRAGMA data_version`` at the
  start of every reading unit of work, which moves when another connection commits.
- A fill that began before an invalidation is not stored (a generation per collection), so a
  read racing a commit cannot put the old value back.
- While the listener is not connected the cache is ``suspend``ed: nothing is answered from it
  or stored in it, every read goes to the database.
- An entry is dropped ``max_age`` seconds (default 5) after it was read, which bounds how long
  a change made to the database by anything but fourcorner (``psql``, a restore) stays unseen.

On PostgreSQL a reader of another process may therefore see a record up to the notification's
delivery time (about a millisecond on one host) old, as if its request had arrived that much
earlier; on SQLite and in one process it sees every commit that finished before it began.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from fourcorner.application.storage import STAMP_MAX_AGE

Key = tuple[str, tuple[object, ...]]

#: the collections read on (nearly) every authenticated request, or for every document sent
#: and received (its participants, the access points and SMPs used, the registration its
#: receiver is looked up by, its organisation's webhooks to raise its events to), written rarely
CACHED_COLLECTIONS = (
    "users",
    "members",
    "organisations",
    "certificates",
    "api_keys",
    "participants",
    "access_points",
    "smps",
    "smp_registrations",
    "webhooks",
)


class RecordCache:
    def __init__(
        self,
        collections: Iterable[str] = CACHED_COLLECTIONS,
        *,
        max_entries: int = 10_000,
        max_age: float = STAMP_MAX_AGE,
        enabled: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._entries: dict[str, dict[Key, tuple[float, tuple[Any, ...]]]] = {
            n: {} for n in collections
        }
        self._generations: dict[str, int] = dict.fromkeys(self._entries, 0)
        self._epoch = 0  # moves with every invalidation of any collection
        self._max = max_entries
        self._max_age = max_age
        self._enabled = enabled
        self._clock = clock

    @property
    def collections(self) -> frozenset[str]:
        return frozenset(self._entries)

    def holds(self, collection: str) -> bool:
        return collection in self._entries

    def get(self, collection: str, key: Key) -> tuple[Any, ...] | None:
        if not self._enabled:
            return None
        entry = self._entries[collection].get(key)
        if entry is None or entry[0] <= self._clock():
            return None
        return entry[1]

    def stamp(self) -> int | None:
        """A number that stays the same while no collection here is invalidated (no commit
        that wrote one, here or, as far as this process has heard, elsewhere); ``None`` while
        suspended. What was computed from reads of these collections alone is still true
        while the stamp is the one taken before the reads, for ``max_age`` seconds at most."""
        return self._epoch if self._enabled else None

    def generation(self, collection: str) -> int:
        """Pass to ``put``: a fill is stored only if no invalidation came in between."""
        return self._generations[collection]

    def put(self, collection: str, key: Key, records: tuple[Any, ...], generation: int) -> None:
        if not self._enabled or self._generations[collection] != generation:
            return
        entries = self._entries[collection]
        if len(entries) >= self._max:
            entries.clear()
        entries[key] = (self._clock() + self._max_age, records)

    def invalidate(self, collections: Iterable[str]) -> None:
        for name in collections:
            entries = self._entries.get(name)
            if entries is not None:
                entries.clear()
                self._generations[name] += 1
                self._epoch += 1

    def invalidate_all(self) -> None:
        self.invalidate(list(self._entries))

    def suspend(self) -> None:
        """Answer nothing and store nothing until ``resume`` (the invalidations are lost)."""
        self._enabled = False
        self.invalidate_all()
        self._epoch += 1

    def resume(self) -> None:
        self.invalidate_all()
        self._epoch += 1
        self._enabled = True
