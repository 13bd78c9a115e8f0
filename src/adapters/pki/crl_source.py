"""What the revocation check (``adapters.pki.revocation``) fetches and keeps: per CRL
distribution point URL the list kept from there, per certificate (its OCSP CertID) the answer
kept from its responder; each with its fetching and what was logged of it (``Source``), the
bounded set of them (``Sources``), and their fetches (``Fetches``).

A failed fetch is tried again after ``RETRY_FIRST``, then after twice as long each time, at
most ``RETRY_MOST`` apart. What a source logs is logged once per change of its state, not
once per fetch or check: a failure as a warning when it is the first since a list came in or
its reason changed (the same failure again is info), a certificate accepted unchecked once
until a list comes in.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Generic, TypeVar

import attrs

from fourcorner.adapters.pki.certificates import instant
from fourcorner.adapters.pki.freshness import Fresh, Unusable
from fourcorner.domain.clock import utc

K = TypeVar("K", bound=Fresh)
Clock = Callable[[], datetime]

log = logging.getLogger("fourcorner.revocation")
_WHAT = {"crl": "revocation list", "ocsp": "OCSP answer"}

RETRY_FIRST = timedelta(seconds=30)
RETRY_MOST = timedelta(minutes=10)
MAX_SOURCES = 32
"""Distribution points kept at once (a list each): beyond, the least recently used one whose
fetch is not in flight is let go; while every one's is, no other is taken."""
MAX_ANSWERS = 1024  # OCSP answers kept at once (one a certificate), let go the same way


@attrs.define(eq=False)
class Source(Generic[K]):
    """One distribution point (or one certificate's OCSP answer): what is kept from ``url``,
    and its fetching."""

    url: str
    method: str = "crl"  # or "ocsp"
    known: K | None = None
    task: asyncio.Task[None] | None = None  # the fetch in flight
    failures: int = 0  # fetches failed in a row
    retry_at: datetime | None = None  # no fetch before, after a failure
    error: str = ""  # why the last fetch failed
    waited: bool = False  # a check waited for it since the last fetch that succeeded
    warned: bool = False  # SOFT: a certificate was accepted unchecked since then
    said: str = ""  # the failure last logged as a warning since then

    def due(self, now: datetime) -> bool:
        """Whether a fetch should start: none in flight, none failed lately, and no list kept
        or the kept one due to be fetched again."""
        if self.task is not None or (self.retry_at is not None and now < self.retry_at):
            return False
        return self.known is None or now >= self.known.refresh_at

    def took(self, known: K) -> None:
        """A fetch brought ``known``, a list (or answer) that counts: the source is known
        again."""
        self.known, self.failures, self.retry_at, self.error = known, 0, None, ""
        self.waited = self.warned = False
        self.said = ""

    def failed(self, why: str, now: datetime) -> tuple[timedelta, bool]:
        """A fetch failed at ``now`` for ``why``: how long until the next may start, and
        whether the failure is news (the first since a list came in, or another reason)."""
        self.failures += 1
        delay = min(RETRY_FIRST * 2 ** min(self.failures - 1, 16), RETRY_MOST)
        self.retry_at, self.error = now + delay, why
        news, self.said = why != self.said, why
        return delay, news


class Sources(Generic[K]):
    """At most ``size`` sources by key (a URL, a CertID), the least recently used one let go
    first; one whose fetch is in flight is never let go, so while all of them are, ``get``
    takes no other (None). Shared by the checks of the event loop and of worker threads."""

    def __init__(self, size: int = MAX_SOURCES, method: str = "crl") -> None:
        self._size, self._method = size, method
        self._kept: OrderedDict[str, Source[K]] = OrderedDict()
        self._lock = threading.Lock()
        self.warned_full = False  # SOFT: a certificate was accepted unchecked for want of room

    def get(self, url: str, key: str | None = None) -> Source[K] | None:
        """The source of ``key`` (default: ``url``), now the most recently used; a new one
        fetched from ``url`` when there is room (an idle one let go for it), else None."""
        key = url if key is None else key
        with self._lock:
            source = self._kept.get(key)
            if source is not None:
                self._kept.move_to_end(key)
                return source
            if len(self._kept) >= self._size:
                idle = next((u for u, s in self._kept.items() if s.task is None), None)
                if idle is None:
                    return None
                del self._kept[idle]
            self.warned_full = False
            source = self._kept[key] = Source[K](url, self._method)
            return source

    def all(self) -> list[Source[K]]:
        """The sources kept, least recently used first."""
        with self._lock:
            return list(self._kept.values())

    def __len__(self) -> int:
        return len(self._kept)


class Fetches:
    """The fetches of the sources: each brings what its source keeps when it counts at
    ``clock()`` (not older than the one kept while that one counts, not past its nextUpdate
    by ``grace`` or more), else it counts as a failure; both are logged.

    An older one never replaces one that counts (a copy replayed is not taken as new); once
    the kept one has lapsed, what counts is taken whoever issued it when: the answer of
    another responder, signed before the kept one, answers once that one has lapsed."""

    def __init__(self, clock: Clock, grace: timedelta) -> None:
        self._clock, self._grace = clock, grace
        self.loop: asyncio.AbstractEventLoop | None = None  # where fetches run
        self.closed = False  # no fetch starts once set

    def start(self, source: Source[K], obtain: Callable[[], Awaitable[K]]) -> None:
        """Start fetching for ``source`` by ``obtain``: on the running loop, or from a worker
        thread on the loop fetches ran on before (none known yet: nothing starts)."""
        try:
            self.loop = asyncio.get_running_loop()
        except RuntimeError:
            known = self.loop
            if known is not None and not known.is_closed():
                with contextlib.suppress(RuntimeError):  # closed meanwhile
                    known.call_soon_threadsafe(self.launch, source, obtain)
            return
        self.launch(source, obtain)

    def launch(self, source: Source[K], obtain: Callable[[], Awaitable[K]]) -> None:
        if source.task is None and not self.closed:
            source.task = asyncio.get_running_loop().create_task(self._fetch(source, obtain))

    async def _fetch(self, source: Source[K], obtain: Callable[[], Awaitable[K]]) -> None:
        what = _WHAT[source.method]
        try:
            known = await obtain()
            now = utc(self._clock())
            kept = source.known
            if kept is not None and not kept.lapsed(now, self._grace) and known.older_than(kept):
                raise Unusable(
                    f"it is older than the one kept (thisUpdate {instant(known.this_update)})"
                )
            if known.lapsed(now, self._grace):
                raise Unusable(
                    f"it is out of date: its nextUpdate {instant(known.next_update)} is past by "
                    f"more than the grace of {self._grace.total_seconds():g} s"
                )
        except Unusable as e:
            self._failed(source, what, str(e))
        except Exception as e:  # a bug of ours: the answer is not used, and asked for later
            log.exception(f"{what} unreadable", extra={"url": source.url})
            self._failed(source, what, f"it could not be read: {e!r}"[:300])
        else:
            source.took(known)
            log.info(
                f"{what} fetched",
                extra={
                    "event": "revocation.fetched",
                    "url": source.url,
                    "method": source.method,
                    **known.logged(),
                    "next_update": instant(known.next_update),
                },
            )
        finally:
            source.task = None

    def _failed(self, source: Source[K], what: str, why: str) -> None:
        delay, news = source.failed(why, utc(self._clock()))
        log.log(
            logging.WARNING if news else logging.INFO,
            f"{what} not fetched",
            extra={
                "event": "revocation.fetch_failed",
                "url": source.url,
                "method": source.method,
                "reason": why,
                "retry_in": delay.total_seconds(),
            },
        )
