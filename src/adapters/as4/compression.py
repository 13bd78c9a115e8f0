"""The payload's gzip stream: written deterministically (no timestamp, no file name, so a
rebuilt message has the same digest) and read back with a hard cap on the output."""

from __future__ import annotations

import gzip
import zlib

from adapters.as4.errors import DECOMPRESSION_FAILURE, As4Error

COMPRESS_LEVEL = 6
_GZIP_WBITS = 16 + zlib.MAX_WBITS


def compress(payload: bytes) -> bytes:
    return gzip.compress(payload, compresslevel=COMPRESS_LEVEL, mtime=0)


def decompress(data: bytes, max_size: int) -> bytes:
    """The gunzipped ``data`` (every member); ``EBMS:0303`` if it is not gzip, is cut short,
    has trailing bytes or would exceed ``max_size`` bytes (decompression stops there)."""
    if max_size < 0:
        raise ValueError("max_size must not be negative")
    output: list[bytes] = []
    size = 0
    remaining = data
    try:
        while True:
            stream = zlib.decompressobj(_GZIP_WBITS)
            chunk = stream.decompress(remaining, max_size - size + 1)
            size += len(chunk)
            output.append(chunk)
            if size > max_size:
                raise As4Error.of(
                    DECOMPRESSION_FAILURE, f"the payload decompresses to more than {max_size} bytes"
                )
            if not stream.eof:
                raise As4Error.of(DECOMPRESSION_FAILURE, "the gzip stream is cut short")
            remaining = stream.unused_data
            if not remaining:
                return b"".join(output)
    except zlib.error as e:
        raise As4Error.of(DECOMPRESSION_FAILURE, "the payload is not a gzip stream") from e
