"""Blobs in memory, for embedders and tests on the in-memory storage. Uploads are still
streamed to files (``incoming``), in a spool folder of the process's own, and ``local``
copies a blob to a file there for as long as it is needed."""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from fourcorner.adapters.blobs.spool import CHUNK, Spool
from fourcorner.application.storage import UnitOfWork


def _now() -> datetime:
    return datetime.now(UTC)


class InMemoryBlobStore:
    def __init__(self, *, clock: Callable[[], datetime] = _now) -> None:
        self.blobs: dict[str, bytes] = {}
        self._stored_at: dict[str, datetime] = {}
        self._clock = clock
        self._spool = Spool(Path(tempfile.mkdtemp(prefix="fourcorner-blobs-")))

    def incoming(self) -> Path:
        return self._spool.incoming()

    async def adopt(self, key: str, incoming: Path) -> int:
        data = await asyncio.to_thread(incoming.read_bytes)
        await asyncio.to_thread(incoming.unlink, missing_ok=True)
        return await self.put(key, data)

    async def put(self, key: str, data: bytes) -> int:
        self.blobs[key] = data
        self._stored_at[key] = self._clock()
        return len(data)

    async def put_all_in(
        self, uow: UnitOfWork, blobs: Sequence[tuple[str, bytes | Path]]
    ) -> list[int]:
        """Stored now (``put_all``): no unit of work holds these blobs."""
        return await self.put_all(blobs)

    async def put_all(self, blobs: Sequence[tuple[str, bytes | Path]]) -> list[int]:
        return [
            await (self.put(key, source) if isinstance(source, bytes) else self.adopt(key, source))
            for key, source in blobs
        ]

    async def get(self, key: str) -> bytes:
        return self.blobs[key]

    async def chunks(self, key: str) -> AsyncIterator[bytes]:
        data = self.blobs[key]
        for start in range(0, len(data), CHUNK):
            yield data[start : start + CHUNK]

    @contextlib.asynccontextmanager
    async def local(self, key: str) -> AsyncIterator[Path]:
        data = self.blobs[key]
        path = self._spool.incoming()
        try:
            await asyncio.to_thread(path.write_bytes, data)
            yield path
        finally:
            path.unlink(missing_ok=True)

    def path(self, key: str) -> Path | None:
        return None

    async def delete(self, key: str) -> None:
        self.blobs.pop(key, None)
        self._stored_at.pop(key, None)

    async def delete_all(self, keys: Sequence[str]) -> None:
        for key in keys:
            await self.delete(key)

    async def stored(self, written_before: datetime) -> AsyncIterator[str]:
        for key, at in list(self._stored_at.items()):
            if at < written_before:
                yield key

    async def discard_incoming(self, written_before: datetime) -> int:
        return await self._spool.discard(written_before)
