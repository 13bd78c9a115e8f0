"""Failed authentications one process tells the others of one PostgreSQL database.

Each process throttles failed authentications by what it counted (``http.throttle``); with
several processes on one database, a guesser would get the allowance once per process. A
process shares its failures through its listener's connection (``listener``), never through
the pool, and never on the answer path: a failure is only added to this outbox (in memory), and
the listener sends what has gathered at most every ``EVERY`` seconds, in one round trip of a
few ``pg_notify`` on the ``fourcorner_failures`` channel (``<schema>:<sender>:<JSON object of
key: count>``, each under PostgreSQL's 8000 bytes). A flood of failures costs the database one
round trip every ``EVERY`` seconds per process; the keys waiting are bounded (``MAX_PENDING``;
a key beyond them is counted by its own process only).

A notification heard is input: one that is not exactly what ``take`` writes (the schema,
another sender of 12 hex digits, a JSON object of at most ``MAX_KEYS`` known keys, each of
printable ASCII, counts from 1 to ``MAX_COUNT``) is ignored whole. While the listener is down
nothing gathers or is heard: each process counts its own failures only.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable, Mapping

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

_KEY = re.compile(r"(?:addr|key):[ -~]{0,80}")
_SENDER = re.compile(r"[0-9a-f]{12}")
log = logging.getLogger("fourcorner.storage")


class FailureShare:
    """The failures of this process not sent yet, and the hearing of the others'.

    ``heard`` is given each valid notification of another process of ``schema``: key to
    count. ``sender`` tells this process's notifications apart (they are not heard again)."""

    def __init__(
        self, schema: str | None, sender: str, heard: Callable[[Mapping[str, int]], None]
    ) -> None:
        self._prefix = f"{schema or ''}:"
        self._own = f"{self._prefix}{sender}:"
        self._heard = heard
        self._pending: dict[str, int] = {}
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
        payloads: list[str] = []
        entries: list[str] = []
        size = len(self._own) + 2
        for key, count in pending.items():
            entry = f"{json.dumps(key)}:{count}"
            if entries and (len(entries) == MAX_KEYS or size + len(entry) + 1 > MAX_BYTES):
                payloads.append(self._payload(entries))
                entries, size = [], len(self._own) + 2
            entries.append(entry)
            size += len(entry) + 1
        payloads.append(self._payload(entries))
        return payloads

    def _payload(self, entries: list[str]) -> str:
        return f"{self._own}{{{','.join(entries)}}}"

    def hear(self, payload: str) -> None:
        """A notification of the channel: handed to ``heard`` when it is another process's of
        this schema and valid, else ignored."""
        if not payload.startswith(self._prefix) or payload.startswith(self._own):
            return
        failures = parse(payload[len(self._prefix) :])
        if failures is None:
            log.debug("a notification of failed authentications was ignored: malformed")
            return
        self._heard(failures)


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
