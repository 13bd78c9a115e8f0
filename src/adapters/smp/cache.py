"""A bounded cache of SMP answers, kept for as long as their HTTP caching headers allow.

The cache is shared by every organisation of the service, so it follows the rules of a shared
cache (RFC 9111): ``no-store``, ``no-cache`` and ``private`` answers are not kept, ``s-maxage``
wins over ``max-age``, which wins over ``Expires`` (less ``Date``), and ``Age`` is subtracted.
An answer without any of them is not kept (no heuristic freshness). Lifetimes are capped at
``max_lifetime``; the cache holds at most ``max_entries`` answers and ``max_bytes`` bytes, and
drops the least recently used first. Only the bytes are kept: every use verifies them again
(signature, certificates valid now), so a cached answer is never trusted more than a fresh one.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from datetime import datetime, timedelta
from email.utils import parsedate_to_datetime

from fourcorner.domain.clock import utc

MAX_ENTRIES = 512
MAX_BYTES = 32 * 1024 * 1024
MAX_LIFETIME = timedelta(hours=24)


def _directives(headers: Mapping[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in headers.get("Cache-Control", "").split(","):
        name, _, value = part.strip().partition("=")
        if name:
            out[name.strip().lower()] = value.strip().strip('"')
    return out


def _seconds(text: str) -> float | None:
    return float(text) if text.isascii() and text.isdigit() else None


def _http_date(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return utc(parsedate_to_datetime(text))
    except (TypeError, ValueError, IndexError):
        return None


def freshness(headers: Mapping[str, str], now: datetime) -> timedelta:
    """How long an answer with ``headers``, received at ``now``, may be reused (zero: never)."""
    directives = _directives(headers)
    if {"no-store", "no-cache", "private"} & directives.keys():
        return timedelta(0)
    lifetime: float | None = None
    for name in ("s-maxage", "max-age"):
        if name in directives:
            lifetime = _seconds(directives[name])
            if lifetime is None:
                return timedelta(0)  # a malformed directive: do not guess
            break
    if lifetime is None and "Expires" in headers:
        expires = _http_date(headers.get("Expires"))
        if expires is None:
            return timedelta(0)  # an invalid Expires means "already expired"
        date = _http_date(headers.get("Date")) or utc(now)
        lifetime = (expires - date).total_seconds()
    if lifetime is None:
        return timedelta(0)
    age = _seconds(headers.get("Age", "").strip()) or 0.0
    return max(timedelta(0), timedelta(seconds=lifetime - age))


class AnswerCache:
    """URL → answer bytes, each until its expiry; bounded in count and in bytes (LRU)."""

    def __init__(
        self,
        *,
        max_entries: int = MAX_ENTRIES,
        max_bytes: int = MAX_BYTES,
        max_lifetime: timedelta = MAX_LIFETIME,
    ) -> None:
        self._entries: OrderedDict[str, tuple[bytes, datetime]] = OrderedDict()
        self._bytes = 0
        self._max_entries, self._max_bytes = max_entries, max_bytes
        self._max_lifetime = max_lifetime

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def size(self) -> int:
        """The bytes held."""
        return self._bytes

    def get(self, url: str, now: datetime) -> bytes | None:
        entry = self._entries.get(url)
        if entry is None:
            return None
        if utc(now) >= entry[1]:
            self._drop(url)
            return None
        self._entries.move_to_end(url)
        return entry[0]

    def put(self, url: str, body: bytes, headers: Mapping[str, str], now: datetime) -> None:
        """Keep ``body`` as long as ``headers`` allow (forget any older answer for ``url``)."""
        self._drop(url)
        lifetime = min(freshness(headers, now), self._max_lifetime)
        if lifetime <= timedelta(0) or len(body) > self._max_bytes:
            return
        self._entries[url] = (body, utc(now) + lifetime)
        self._bytes += len(body)
        while len(self._entries) > self._max_entries or self._bytes > self._max_bytes:
            self._drop(next(iter(self._entries)))

    def forget(self, url: str) -> None:
        """Keep no answer for ``url`` (one that turned out not to be usable)."""
        self._drop(url)

    def _drop(self, url: str) -> None:
        entry = self._entries.pop(url, None)
        if entry is not None:
            self._bytes -= len(entry[0])
