"""Blobs in memory, for embedders and tests on the in-memory storage. Uploads are still
streamed to files (``incoming``), in a spool folder of the process's own."""

from __future__ import annotations

import asyncio
import re
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path

from fourcorner.adapters.private import create_file

_INCOMING = re.compile(r"[0-9a-f]{32}\.part")


def _now() -> datetime:
    return datetime.now(UTC)


class InMemoryBlobStore:
    def __init__(self, *, clock: Callable[[], datetime] = _now) -> None:
        self.blobs: dict[str, bytes] = {}
        self._stored_at: dict[str, datetime] = {}
        self._clock = clock
        self._spool = Path(tempfile.mkdtemp(prefix="fourcorner-blobs-"))

    def incoming(self) -> Path:
        return create_file(self._spool / f"{uuid.uuid4().hex}.part")

    async def adopt(self, key: str, incoming: Path) -> int:
        data = await asyncio.to_thread(incoming.read_bytes)
        await asyncio.to_thread(incoming.unlink, missing_ok=True)
        return await self.put(key, data)

    async def put(self, key: str, data: bytes) -> int:
        self.blobs[key] = data
        self._stored_at[key] = self._clock()
        return len(data)

    async def get(self, key: str) -> bytes:
        return self.blobs[key]

    def path(self, key: str) -> Path | None:
        return None

    async def delete(self, key: str) -> None:
        self.blobs.pop(key, None)
        self._stored_at.pop(key, None)

    async def stored(self, written_before: datetime) -> AsyncIterator[str]:
        for key, at in list(self._stored_at.items()):
            if at < written_before:
                yield key

    async def discard_incoming(self, written_before: datetime) -> int:
        cutoff = written_before.timestamp()
        removed = 0
        for path in await asyncio.to_thread(lambda: list(self._spool.iterdir())):
            try:
                stale = _INCOMING.fullmatch(path.name) and path.stat().st_mtime < cutoff
            except FileNotFoundError:
                continue
            if stale:
                path.unlink(missing_ok=True)
                removed += 1
        return removed
