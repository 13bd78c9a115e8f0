"""The payload's gzip stream: written deterministically (no timestamp, no file name, so a
rebuilt message has the same digest) and read back with a hard cap on the output, whole
(``decompress``) or piece by piece (``Inflater``), never holding more than a piece at a time."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable

from fourcorner.adapters.as4.errors import DECOMPRESSION_FAILURE, As4Error

COMPRESS_LEVEL = 6
OUTPUT_CHUNK = 1024 * 1024  # the most one step of inflating hands out
_GZIP_WBITS = 16 + zlib.MAX_WBITS


def compress(payload: bytes) -> bytes:
    return gzip.compress(payload, compresslevel=COMPRESS_LEVEL, mtime=0)


def decompress(data: bytes, max_size: int) -> bytes:
    """The gunzipped ``data`` (every member); ``EBMS:0303`` if it is not gzip, is cut short,
    has trailing bytes or would exceed ``max_size`` bytes (decompression stops there)."""
    output: list[bytes] = []
    inflater = Inflater(max_size, output.append)
    inflater.feed(data)
    inflater.close()
    return b"".join(output)


class Inflater:
    """Gunzips a stream fed in pieces (every member), handing the output to ``sink`` at most
    ``OUTPUT_CHUNK`` bytes at a time; refuses as ``decompress`` does, at the first piece that
    shows the problem (or at ``close`` for a stream cut short)."""

    def __init__(self, max_size: int, sink: Callable[[bytes], object]) -> None:
        if max_size < 0:
            raise ValueError("max_size must not be negative")
        self._max, self._sink = max_size, sink
        self._size = 0
        self._stream = zlib.decompressobj(_GZIP_WBITS)

    def feed(self, data: bytes | memoryview) -> None:
        pending: bytes | memoryview = data
        try:
            while True:
                if self._stream.eof:
                    if not pending:
                        return
                    self._stream = zlib.decompressobj(_GZIP_WBITS)  # the next member
                out = self._stream.decompress(pending, OUTPUT_CHUNK)
                self._emit(out)
                pending = (
                    self._stream.unused_data if self._stream.eof else self._stream.unconsumed_tail
                )
                if not pending and len(out) < OUTPUT_CHUNK:
                    return  # all input taken, and no output held back
        except zlib.error as e:
            raise As4Error.of(DECOMPRESSION_FAILURE, "the payload is not a gzip stream") from e

    def close(self) -> None:
        """The end of the input: ``EBMS:0303`` unless it ended a gzip member."""
        if not self._stream.eof:
            raise As4Error.of(DECOMPRESSION_FAILURE, "the gzip stream is cut short")

    def _emit(self, out: bytes) -> None:
        self._size += len(out)
        if self._size > self._max:
            raise As4Error.of(
                DECOMPRESSION_FAILURE, f"the payload decompresses to more than {self._max} bytes"
            )
        if out:
            self._sink(out)
