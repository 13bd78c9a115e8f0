"""Throttling of failed authentication, per client address and per API key prefix.

Each failed authentication counts against the client's address (an IPv6 client by its /64,
which one host usually holds whole; behind a trusted reverse proxy, the address it forwards:
``proxy``) and, for an API key, against the key's prefix (the characters
``domain.api_key.prefix_of`` keeps). Counting follows the generic cell rate algorithm: a key
may fail ``limit`` times at once, then once more every ``window / limit`` seconds. An address
over its allowance is refused (429, ``Retry-After``) before its credentials are looked at, so
guessing keys costs each address time; a prefix over its allowance refuses only keys that fail
(``auth``): the genuine key, whose hash matches, is never locked out by others' guesses.

Memory is bounded: at most ``max_tracked`` keys are remembered (one float each), the least
recently failed forgotten first. Forgetting one only gives that key its allowance back early;
filling the table needs that many failures, which the address limit slows down.

Each process counts its own failures; on PostgreSQL, it also tells the others (``share``) and
counts theirs as it hears them (``heard``), so several processes allow together what one
would. A failure heard never takes a key past its allowance spent (the state ``limit``
failures at once leave): a notification cannot make a process refuse longer than the rule
does (and one that is forged or replayed is not heard: ``adapters.postgres.failures``). While the processes cannot hear each other, each counts its own.
"""

from __future__ import annotations

import functools
import ipaddress
import math
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping

_MAX_ADDRESS_TEXT = 64
_TOLERANCE = 1e-6  # seconds


@functools.lru_cache(maxsize=4096)
def address_key(remote: str | None) -> str:
    """The key a client address is counted by: the address, or its /64 for IPv6 (remembered
    for the last few thousand addresses: it is asked on every authenticated request)."""
    text = (remote or "")[:_MAX_ADDRESS_TEXT]
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return "addr:" + text  # a Unix socket peer, or none
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return f"addr:{ip.ipv4_mapped}"
        return f"addr:{ipaddress.IPv6Network((int(ip), 64), strict=False)}"
    return f"addr:{ip}"


def prefix_key(prefix: str) -> str:
    return "key:" + prefix


class FailureTracker:
    """Failed attempts per key; ``limit`` 0 counts nothing and refuses nothing."""

    def __init__(
        self,
        limit: int,
        window: float,
        *,
        max_tracked: int = 100_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if limit < 0 or window <= 0 or max_tracked < 1:
            raise ValueError("limit >= 0, window > 0 and max_tracked >= 1")
        self._limit = limit
        self._window = window
        self._interval = window / limit if limit else 0.0
        self._max = max_tracked
        self._clock = clock
        # key -> the time its allowance is whole again (the algorithm's "theoretical arrival
        # time"), least recently failed first
        self._until: OrderedDict[str, float] = OrderedDict()
        self._share: Callable[[Iterable[str]], None] | None = None

    @property
    def counts(self) -> bool:
        """Whether failures are counted at all (``limit`` is not 0)."""
        return bool(self._limit)

    def share(self, publish: Callable[[Iterable[str]], None]) -> None:
        """Give ``publish`` the keys of each failure counted from now on (to tell the other
        processes; it must not wait: it is called on the failing request's path)."""
        self._share = publish

    def __len__(self) -> int:
        return len(self._until)

    def remembers_any(self) -> bool:
        """Whether any key has a failure remembered: while none has, ``retry_after`` is 0 for
        every key, and a caller need not work out its keys to ask."""
        return bool(self._until)

    def retry_after(self, keys: Iterable[str]) -> int:
        """Whole seconds until every one of ``keys`` may fail once more; 0: it may now."""
        if not self._limit:
            return 0
        now = self._clock()
        wait = 0.0
        for key in keys:
            until = self._until.get(key)
            if until is not None:
                wait = max(wait, until + self._interval - now - self._window)
        # the tolerance absorbs rounding both ways: limit failures at once leave exactly the
        # window, and a wait of one interval computed from several clock readings may come out
        # a hair above it (12.000000000000114 s is 12 s, not 13)
        return math.ceil(wait - _TOLERANCE) if wait > _TOLERANCE else 0

    def failed(self, keys: Iterable[str]) -> None:
        """Count one failure against each of ``keys``."""
        if not self._limit:
            return
        if self._share is not None:
            keys = tuple(keys)
            self._share(keys)
        now = self._clock()
        for key in keys:
            self._put(key, max(self._until.pop(key, now), now) + self._interval)

    def heard(self, failures: Mapping[str, int]) -> None:
        """Count the failures another process counted (key to how many), each key at most
        to its allowance spent: never refused longer than ``limit`` failures at once make it
        (a key already further, by this process's own failures, stays there)."""
        if not self._limit:
            return
        now = self._clock()
        spent = now + self._window
        for key, count in failures.items():
            until = max(self._until.pop(key, now), now)
            self._put(key, max(until, min(until + count * self._interval, spent)))

    def _put(self, key: str, until: float) -> None:
        """Remember ``until`` for ``key`` (taken out by the caller) as the most recently
        failed, the least recently failed forgotten beyond ``max_tracked``."""
        entries = self._until
        while len(entries) >= self._max:
            entries.popitem(last=False)
        entries[key] = until
