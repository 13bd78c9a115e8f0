"""Taking a body in (``spooling.body``): one of less than a chunk is kept in memory, no file
made, no thread hop; a larger one is a file holding it byte for byte however it arrives,
written a chunk per thread hop (the file made and written together by the first); the digest
is the body's; a body over the limit is refused and leaves no file."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from typing import Any

import pytest
from aiohttp import StreamReader
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fourcorner.entrypoints.http import spooling
from fourcorner.entrypoints.http.errors import BodyTooLarge

CHUNK = spooling.CHUNK


class _Protocol:
    """What a ``StreamReader`` tells when its buffer fills or drains."""

    _reading_paused = False

    def pause_reading(self, **kwargs: object) -> None: ...

    def resume_reading(self, **kwargs: object) -> None: ...


def _stream(pieces: list[bytes]) -> StreamReader:
    stream = StreamReader(_Protocol(), 2**20, loop=asyncio.get_running_loop())  # type: ignore[arg-type]
    for piece in pieces:
        stream.feed_data(piece)
    stream.feed_eof()
    return stream


sizes = st.lists(
    st.sampled_from([1, 100, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK]) | st.integers(1, 5000),
    max_size=6,
)


@pytest.mark.parametrize("length", [CHUNK + 1, 3 * CHUNK])
async def test_a_body_over_the_limit_is_refused(tmp_path: Path, length: int):
    with pytest.raises(BodyTooLarge):
        await spooling.body(_stream([b"x" * length]), lambda: tmp_path / "body", CHUNK)


@pytest.mark.parametrize(("length", "hops"), [(0, 0), (CHUNK - 1, 0), (CHUNK, 1), (3 * CHUNK, 3)])
async def test_a_large_body_is_written_a_chunk_per_thread_hop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, length: int, hops: int
):
    calls: list[Any] = []
    real = asyncio.to_thread

    async def counting(fn: Any, *args: Any) -> Any:
        calls.append(fn)
        return await real(fn, *args)

    monkeypatch.setattr(spooling.asyncio, "to_thread", counting)
    taken = await spooling.body(_stream([b"x" * length]), lambda: tmp_path / "body", 4 * CHUNK)
    whole = taken if isinstance(taken, bytes) else taken.read_bytes()
    assert whole == b"x" * length
    assert len(calls) == hops


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(sizes)
async def test_a_body_is_kept_in_memory_under_a_chunk_else_in_a_file(
    tmp_path: Path, lengths: list[int]
):
    pieces = [bytes([65 + i % 26]) * n for i, n in enumerate(lengths)]
    whole = b"".join(pieces)
    made: list[Path] = []

    def incoming() -> Path:
        made.append(tmp_path / f"body-{len(made)}")
        return made[-1]

    digest = hashlib.sha256()
    taken = await spooling.body(_stream(pieces), incoming, len(whole), digest)
    assert digest.digest() == hashlib.sha256(whole).digest()
    if len(whole) < CHUNK:
        assert (taken, made) == (whole, [])
    else:
        assert taken == made[-1] and len(made) == 1
        assert isinstance(taken, Path) and taken.read_bytes() == whole
        taken.unlink()


@pytest.mark.parametrize("length", [CHUNK - 1, CHUNK + 1, 3 * CHUNK])
async def test_a_body_over_the_limit_leaves_no_file(tmp_path: Path, length: int):
    target = tmp_path / "body"
    with pytest.raises(BodyTooLarge):
        await spooling.body(_stream([b"x" * length]), lambda: target, length - 1)
    assert not target.exists()
