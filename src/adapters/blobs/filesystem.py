"""Blobs as files under ``<data dir>/blobs``: written to a temporary file, fsynced, then
renamed into place, so a blob either exists whole or not at all. Folders are 0700 and files
0600 (``adapters.private``): documents are for the service's user only."""

from __future__ import annotations

import asyncio
import os
import re
import uuid
from pathlib import Path

from adapters.private import create_file, make_dirs

_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,200}")


class FileBlobStore:
    def __init__(self, root: Path) -> None:
        self._root = Path(root)

    def _file(self, key: str) -> Path:
        if not _KEY.fullmatch(key):
            raise ValueError(f"{key!r} is not a blob key")
        return self._root / key[:2] / key

    def incoming(self) -> Path:
        folder = make_dirs(self._root / "incoming")
        return create_file(folder / f"{uuid.uuid4().hex}.part")

    async def adopt(self, key: str, incoming: Path) -> int:
        return await asyncio.to_thread(self._adopt, key, incoming)

    def _adopt(self, key: str, incoming: Path) -> int:
        target = self._file(key)
        make_dirs(target.parent)
        fd = os.open(incoming, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(incoming, target)
        _fsync_dir(target.parent)
        return target.stat().st_size

    async def put(self, key: str, data: bytes) -> int:
        incoming = self.incoming()
        await asyncio.to_thread(incoming.write_bytes, data)
        return await self.adopt(key, incoming)

    async def get(self, key: str) -> bytes:
        return await asyncio.to_thread(self._file(key).read_bytes)

    def path(self, key: str) -> Path | None:
        return self._file(key)

    async def delete(self, key: str) -> None:
        self._file(key).unlink(missing_ok=True)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
