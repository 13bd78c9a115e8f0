"""Failed authentications one process tells the others of one PostgreSQL database.

Each process throttles failed authentications by what it counted (``http.throttle``); with
several processes on one database, a guesser would get the allowance once per process. A
process shares its failures through its listener's connection (``listener``), never through
the pool, and never on the answer path: a failure is only added to this outbox (in memory), and
the listener sends what has gathered at most every ``EVERY`` seconds, in one round trip of a
few ``pg_notify`` on the ``fourcorner_failures`` channel
(``<schema>:<sender>:<time>:<MAC>:<JSON object of key: count>``, each under PostgreSQL's 8000
bytes). A flood of failures costs the database one round trip every ``EVERY`` seconds per
process; the keys waiting are bounded (``MAX_PENDING``; a key beyond them is counted by its
own process only).

Any role that can connect to the database may send a notification (``NOTIFY`` needs no
privilege), so each is authenticated: ``<MAC>`` is HMAC-SHA256 (``MAC_CHARS`` hex digits of
it) of the rest of the payload, under a key the processes of one database share (derived from
their at-rest key, ``KeySealer.derived``; while that key is rotated, the previous one's is
accepted too). ``<time>`` is when it was sent (milliseconds of the wall clock): one sent more
than ``FRESH`` seconds from now, or heard before (its MAC), is a replay and ignored.

A notification heard is input: one that is not exactly what ``take`` writes (the schema,
another sender of 12 hex digits, a fresh time, the MAC, a JSON object of at most ``MAX_KEYS``
known keys, each of printable ASCII, counts from 1 to ``MAX_COUNT``) is ignored whole. While
the listener is down nothing gathers or is heard: each process counts its own failures only.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence

CHANNEL = "fourcorner_failures"
EVERY = 0.1
"""Seconds between two sendings of the failures gathered (and the listener's longest wait)."""
MAX_PENDING = 512
"""Keys gathered between two sendings; a key more is not shared (its process counts it)."""
MAX_KEYS = 64
"""Keys a notification names at most."""
MAX_COUNT = 1_000_000
"""The largest count a notification gives a key (more failures are sent as this many)."""
MAX_BYTES = 7_900
"""The longest payload sent; PostgreSQL refuses one of 8000 bytes or more."""
LABEL = b"fourcorner failure notifications"
"""What the notifications' key is derived for (from the at-rest key)."""
MAC_CHARS = 64
"""Hex digits of the MAC a notification carries (all of HMAC-SHA256's)."""
FRESH = 30.0
"""Seconds a notification's time may be from the hearer's clock (farther: ignored); those heard
within them are remembered (by MAC) so that each is heard once."""

_KEY = re.compile(r"(?:addr|key):[ -~]{0,80}")
_SENDER = re.compile(r"[0-9a-f]{12}")
_SIGNED = re.compile(
    rf"(?P<sender>[^:]*):(?P<sent>[0-9]{{1,15}}):(?P<mac>[0-9a-f]{{{MAC_CHARS}}}):"
)
log = logging.getLogger("fourcorner.storage")


class FailureShare:
    """The failures of this process not sent yet, and the hearing of the others'.

    ``heard`` is given each valid notification of another process of ``schema``: key to
    count. ``sender`` tells this process's notifications apart (they are not heard again).
    ``keys`` authenticate them: the first signs, any of them verifies. ``clock``: the wall
    clock's seconds."""

    def __init__(
        self,
        schema: str | None,
        sender: str,
        heard: Callable[[Mapping[str, int]], None],
        keys: Sequence[bytes],
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not keys:
            raise ValueError("failure notifications are authenticated: a key is needed")
        self._prefix = f"{schema or ''}:"
        self._own = f"{self._prefix}{sender}:"
        self._heard = heard
        self._keys = tuple(keys)
        self._clock = clock
        self._pending: dict[str, int] = {}
        self._seen: OrderedDict[str, float] = OrderedDict()
        self._open = False

    def resume(self) -> None:
        """The listener is connected: failures gather for it to send."""
        self._open = True

    def suspend(self) -> None:
        """The listener is down: what gathered is dropped, nothing more gathers."""
        self._open = False
        self._pending.clear()

    def failed(self, keys: Iterable[str]) -> None:
        """One failure of each of ``keys``, to send with the next batch (memory only)."""
        if not self._open:
            return
        pending = self._pending
        for key in keys:
            count = pending.get(key)
            if count is not None:
                pending[key] = min(count + 1, MAX_COUNT)
            elif len(pending) < MAX_PENDING and _KEY.fullmatch(key):
                pending[key] = 1

    def take(self) -> list[str]:
        """The payloads of what gathered (none when nothing did); the outbox is empty after."""
        if not self._pending:
            return []
        pending, self._pending = self._pending, {}
        sent = str(int(self._clock() * 1000))
        payloads: list[str] = []
        entries: list[str] = []
        empty = len(self._own) + len(sent) + MAC_CHARS + 4
        size = empty
        for key, count in pending.items():
            entry = f"{json.dumps(key)}:{count}"
            if entries and (len(entries) == MAX_KEYS or size + len(entry) + 1 > MAX_BYTES):
                payloads.append(self._payload(sent, entries))
                entries, size = [], empty
            entries.append(entry)
            size += len(entry) + 1
        payloads.append(self._payload(sent, entries))
        return payloads

    def _payload(self, sent: str, entries: list[str]) -> str:
        return signed(self._keys[0], self._own, sent, f"{{{','.join(entries)}}}")

    def hear(self, payload: str) -> None:
        """A notification of the channel: handed to ``heard`` when it is another process's of
        this schema and valid, else ignored."""
        if not payload.startswith(self._prefix) or payload.startswith(self._own):
            return
        text = payload[len(self._prefix) :]
        signed = _SIGNED.match(text) if len(text) <= MAX_BYTES else None
        if signed is None:
            log.debug("a notification of failed authentications was ignored: malformed")
            return
        sender, sent, mac = signed["sender"], signed["sent"], signed["mac"]
        body = text[signed.end() :]
        own = f"{self._prefix}{sender}:"
        if not any(hmac.compare_digest(mac, _mac(k, own, sent, body)) for k in self._keys):
            log.debug("a notification of failed authentications was ignored: not authentic")
            return
        now = self._clock()
        if abs(now - int(sent) / 1000) > FRESH or mac in self._seen:
            log.debug("a notification of failed authentications was ignored: a replay")
            return
        failures = parse(f"{sender}:{body}")
        if failures is None:
            log.debug("a notification of failed authentications was ignored: malformed")
            return
        self._remember(mac, now)
        self._heard(failures)

    def _remember(self, mac: str, now: float) -> None:
        """Remember an authentic notification for ``FRESH`` seconds (it could be replayed that
        long); only the processes' own are remembered, so they stay few."""
        seen = self._seen
        while seen and next(iter(seen.values())) < now - FRESH:
            seen.popitem(last=False)
        seen[mac] = now


def signed(key: bytes, own: str, sent: str, body: str) -> str:
    """The payload of ``body`` (a JSON object) signed with ``key``: ``own`` is the schema and
    sender with their colons, ``sent`` the milliseconds of the wall clock."""
    return f"{own}{sent}:{_mac(key, own, sent, body)}:{body}"


def _mac(key: bytes, own: str, sent: str, body: str) -> str:
    return hmac.new(key, f"{own}{sent}:{body}".encode(), hashlib.sha256).hexdigest()


def parse(text: str) -> dict[str, int] | None:
    """``<sender>:<JSON object>`` as ``FailureShare.take`` writes it: key to count, or
    ``None`` when it is anything else."""
    if len(text) > MAX_BYTES:
        return None
    sender, colon, body = text.partition(":")
    if not colon or not _SENDER.fullmatch(sender):
        return None
    try:
        failures = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(failures, dict) or not 0 < len(failures) <= MAX_KEYS:
        return None
    for key, count in failures.items():
        if not _KEY.fullmatch(key) or type(count) is not int or not 0 < count <= MAX_COUNT:
            return None
    return failures
