"""A bounded cache of validation answers, addressed by the SHA-256 of the document's bytes.

What the rules say about a document is a function of its bytes and of the rules alone: the
worker reads nothing else (no clock, no settings, no record of who asks), and the rules of a
validator never change while it runs (they are the package's data, compiled once). So the
answer for bytes already checked can be given again without checking them. The case that
matters: one server serving both sides of a transfer checks the same document at intake and
again when its access point receives it, once per corner.

Only verdicts are kept (``ok``, ``invalid``, ``failed``); a worker's bug, a timeout or a
stopped worker is never remembered. The cache is bounded by the bytes of what it keeps (the
merged SVRL and the failed asserts' texts) and forgets the least recently used first; an
answer larger than an eighth of the bound is not kept.

Between organisations: an entry is found only by presenting the very bytes it was made from,
so what it gives back is what the caller could compute from the bytes it already holds; it
carries nothing of who checked them first (no organisation, transaction or time). What
remains observable is timing: a document checked before answers sooner, which tells someone
who holds a document, byte for byte, that it was checked here recently. Network documents
carry a unique instance identifier and creation time in their header, so this tells nothing
to anyone who does not already hold the document whole; an operator who wants no such signal
sets the size to 0 (``FOURCORNER_VALIDATION_CACHE_MIB``).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Any

from fourcorner.adapters.sbdh.parser import read_small
from fourcorner.adapters.validation.worker import Checked

KEPT = ("ok", "invalid", "failed")  # verdicts; "error" (a bug) is never kept
_ENTRY = 512  # bytes of bookkeeping counted per entry besides its texts
_CHUNK = 1024 * 1024


def digest_bytes(document: bytes) -> bytes:
    return hashlib.sha256(document).digest()


def digest_file(path: str) -> bytes:
    """The SHA-256 of a file, read in chunks (never whole in memory)."""
    h = hashlib.sha256()
    with open(path, "rb") as file:
        while chunk := file.read(_CHUNK):
            h.update(chunk)
    return h.digest()


def digest_small(path: str, limit: int) -> bytes | None:
    """The SHA-256 of a file of at most ``limit`` bytes, read whole; None when it is larger
    (nothing read)."""
    data = read_small(path, limit)
    return None if data is None else digest_bytes(data)


def cost(answer: tuple[str, Any]) -> int:
    """Bytes an answer holds, roughly: its SVRL and texts, and a fixed overhead."""
    _, value = answer
    if isinstance(value, Checked):
        return _ENTRY + len(value.svrl) + sum(sum(map(len, f)) for f in value.failed)
    if isinstance(value, list):  # invalid: [(field, problem), ...]
        return _ENTRY + sum(len(a) + len(b) for a, b in value)
    if isinstance(value, str):  # failed: the reason
        return _ENTRY + len(value)
    return _ENTRY  # a document the rules do not apply to: its root and identifiers


class Answers:
    """``get(key)`` / ``put(key, answer)``; ``limit``: bytes kept at most (0: nothing)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.size = 0
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[bytes, tuple[tuple[str, Any], int]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: bytes) -> tuple[str, Any] | None:
        entry = self._entries.get(key)
        if entry is None:
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return entry[0]

    def put(self, key: bytes, answer: tuple[str, Any]) -> None:
        if answer[0] not in KEPT:
            return
        size = cost(answer)
        if size > self.limit // 8 or key in self._entries:
            return
        self._entries[key] = (answer, size)
        self.size += size
        while self.size > self.limit:
            _, (_, dropped) = self._entries.popitem(last=False)
            self.size -= dropped
