"""The SBDH and MLS functions behind the service's ``Envelopes`` port."""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

from fourcorner.adapters.sbdh.mls import read_mls, read_mls_file, write_mls
from fourcorner.adapters.sbdh.reader import read_envelope, read_envelope_file
from fourcorner.adapters.sbdh.wrap import read_bare, read_bare_file, wrap, wrap_file
from fourcorner.adapters.sbdh.writer import write_sbd
from fourcorner.domain.envelope import MessageLevelStatus, Sbdh
from fourcorner.domain.ubl import UblFacts

KEPT_BYTES = 4 * 1024 * 1024
"""How many bytes of the SBDs it read last an ``SbdhEnvelopes`` keeps, with their envelopes."""


class SbdhEnvelopes:
    """``read`` keeps the envelopes of the SBDs it read whole last (``kept_bytes`` of them,
    least recently read out first): a document one of this service's organisations sends to
    another's is read at intake and again as it arrives (and a message sent again, again),
    the same bytes each time, so the same envelope (an ``Sbdh`` is immutable, and a pure
    function of the bytes). The SBD itself is the key, compared whole (its hash costs a
    fraction of a SHA-256). A refusal is not kept: it is raised at each read. Files are not
    kept."""

    def __init__(self, kept_bytes: int = KEPT_BYTES) -> None:
        self._kept_bytes = kept_bytes
        self._kept: OrderedDict[bytes, Sbdh] = OrderedDict()
        self._kept_size = 0
        self._kept_lock = threading.Lock()  # a large message's SBD is read in a thread

    def read_file(self, path: Path) -> Sbdh:
        return read_envelope_file(path)

    def read(self, data: bytes) -> Sbdh:
        # only bytes themselves compare as their content does; a document larger than the
        # bound is never kept (it would push out all the others)
        if type(data) is not bytes or len(data) > self._kept_bytes:
            return read_envelope(data)
        with self._kept_lock:
            kept = self._kept.get(data)
            if kept is not None:
                self._kept.move_to_end(data)
                return kept
        envelope = read_envelope(data)
        with self._kept_lock:
            if self._kept.pop(data, None) is not None:
                self._kept_size -= len(data)
            self._kept[data] = envelope
            self._kept_size += len(data)
            while self._kept_size > self._kept_bytes:
                self._kept_size -= len(self._kept.popitem(last=False)[0])
        return envelope

    def write(self, envelope: Sbdh, payload: bytes) -> bytes:
        return write_sbd(envelope, payload)

    def write_mls(self, status: MessageLevelStatus) -> bytes:
        return write_mls(status)

    def read_mls(self, data: bytes) -> MessageLevelStatus:
        return read_mls(data)

    def read_mls_file(self, path: Path) -> MessageLevelStatus:
        return read_mls_file(path)

    def read_bare_file(self, path: Path) -> UblFacts | None:
        return read_bare_file(path)

    def wrap_file(self, envelope: Sbdh, source: Path, target: Path) -> None:
        wrap_file(envelope, source, target)

    def read_bare(self, data: bytes) -> UblFacts | None:
        return read_bare(data)

    def wrap(self, envelope: Sbdh, data: bytes) -> bytes:
        return wrap(envelope, data)
