"""Blobs as files under ``<data dir>/blobs``: written to a temporary file, fsynced, then
renamed into place, so a blob either exists whole or not at all. Folders are 0700 and files
0600 (``adapters.private``): documents are for the service's user only.

A blob's modification time is when it was stored (``adopt`` sets it, from the store's clock):
``stored`` lists blobs by it, for the sweep that removes those no record names. Uploads are
streamed to ``incoming/`` first (``adapters.blobs.spool``); ``discard_incoming`` removes the
ones a crash left there. ``local`` and ``path`` give the blob's own file.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path

from fourcorner.adapters.blobs.spool import Spool, file_chunks, older
from fourcorner.adapters.private import make_dirs

_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,200}")


def _now() -> datetime:
    return datetime.now(UTC)


class FileBlobStore:
    def __init__(self, root: Path, *, clock: Callable[[], datetime] = _now) -> None:
        self._root = Path(root)
        self._clock = clock
        self._spool = Spool(self._root / "incoming")

    def _file(self, key: str) -> Path:
        if not _KEY.fullmatch(key):
            raise ValueError(f"{key!r} is not a blob key")
        return self._root / key[:2] / key

    def incoming(self) -> Path:
        return self._spool.incoming()

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
        stored = self._clock().timestamp()
        os.utime(incoming, (stored, stored))
        os.replace(incoming, target)
        _fsync_dir(target.parent)
        return target.stat().st_size

    async def put(self, key: str, data: bytes) -> int:
        incoming = self.incoming()
        await asyncio.to_thread(incoming.write_bytes, data)
        return await self.adopt(key, incoming)

    async def get(self, key: str) -> bytes:
        return await asyncio.to_thread(self._file(key).read_bytes)

    def chunks(self, key: str) -> AsyncIterator[bytes]:
        return file_chunks(self._file(key))

    @contextlib.asynccontextmanager
    async def local(self, key: str) -> AsyncIterator[Path]:
        path = self._file(key)
        if not await asyncio.to_thread(path.is_file):
            raise FileNotFoundError(f"no blob {key!r}")
        yield path

    def path(self, key: str) -> Path | None:
        return self._file(key)

    async def delete(self, key: str) -> None:
        self._file(key).unlink(missing_ok=True)

    async def stored(self, written_before: datetime) -> AsyncIterator[str]:
        cutoff = written_before.timestamp()
        folders = await asyncio.to_thread(self._folders)
        for folder in folders:
            for key in await asyncio.to_thread(older, folder, cutoff, _KEY):
                yield key

    def _folders(self) -> list[Path]:
        """The two-character folders blobs are spread over (``_file``)."""
        try:
            entries = list(os.scandir(self._root))
        except FileNotFoundError:
            return []
        return sorted(
            Path(e.path) for e in entries if len(e.name) == 2 and e.is_dir(follow_symlinks=False)
        )

    async def discard_incoming(self, written_before: datetime) -> int:
        return await self._spool.discard(written_before)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
