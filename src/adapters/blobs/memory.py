"""Blobs in memory, for embedders and tests on the in-memory storage."""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from pathlib import Path

from adapters.private import create_file


class InMemoryBlobStore:
    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}
        self._spool = Path(tempfile.mkdtemp(prefix="fourcorner-blobs-"))

    def incoming(self) -> Path:
        return create_file(self._spool / f"{uuid.uuid4().hex}.part")

    async def adopt(self, key: str, incoming: Path) -> int:
        data = await asyncio.to_thread(incoming.read_bytes)
        await asyncio.to_thread(incoming.unlink, missing_ok=True)
        return await self.put(key, data)

    async def put(self, key: str, data: bytes) -> int:
        self.blobs[key] = data
        return len(data)

    async def get(self, key: str) -> bytes:
        return self.blobs[key]

    def path(self, key: str) -> Path | None:
        return None

    async def delete(self, key: str) -> None:
        self.blobs.pop(key, None)
