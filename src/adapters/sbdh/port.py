"""The SBDH and MLS functions behind the service's ``Envelopes`` port."""

from __future__ import annotations

from pathlib import Path

from fourcorner.adapters.sbdh.mls import read_mls, read_mls_file, write_mls
from fourcorner.adapters.sbdh.reader import read_envelope, read_envelope_file
from fourcorner.adapters.sbdh.wrap import read_bare, read_bare_file, wrap, wrap_file
from fourcorner.adapters.sbdh.writer import write_sbd
from fourcorner.domain.envelope import MessageLevelStatus, Sbdh
from fourcorner.domain.ubl import UblFacts


class SbdhEnvelopes:
    def read_file(self, path: Path) -> Sbdh:
        return read_envelope_file(path)

    def read(self, data: bytes) -> Sbdh:
        return read_envelope(data)

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
