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
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from fourcorner.adapters.blobs.spool import Spool, file_chunks, older
from fourcorner.adapters.private import make_dirs
from fourcorner.application.storage import UnitOfWork

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
        return (await self.put_all([(key, incoming)]))[0]

    async def put(self, key: str, data: bytes) -> int:
        return (await self.put_all([(key, data)]))[0]

    async def put_all_in(
        self, uow: UnitOfWork, blobs: Sequence[tuple[str, bytes | Path]]
    ) -> list[int]:
        """Stored now (``put_all``): no unit of work holds these blobs."""
        return await self.put_all(blobs)

    async def put_all(self, blobs: Sequence[tuple[str, bytes | Path]]) -> list[int]:
        return await asyncio.to_thread(self._put_all, list(blobs))

    def _put_all(self, blobs: list[tuple[str, bytes | Path]]) -> list[int]:
        """Each blob written to (or already in) a file of ``incoming`` and synced, then all
        moved into place, then each folder they went to synced once: one thread hop and one
        folder sync for a transaction's blobs (they share a folder, ``blob_key``)."""
        targets = [self._file(key) for key, _ in blobs]  # every key checked before writing
        stored = self._clock().timestamp()
        written: list[Path] = []  # files made here, removed if they are not moved into place
        try:
            moves, sizes = [], []
            for _, source in blobs:
                if isinstance(source, bytes):
                    incoming = self._spool.incoming()
                    written.append(incoming)
                    sizes.append(_write_synced(incoming, source))
                else:
                    incoming = source
                    sizes.append(_sync(incoming))
                os.utime(incoming, (stored, stored))
                moves.append(incoming)
            folders = list(dict.fromkeys(target.parent for target in targets))
            for folder in folders:
                make_dirs(folder)
            for incoming, target in zip(moves, targets, strict=True):
                os.replace(incoming, target)
            for folder in folders:
                _fsync_dir(folder)
        except BaseException:
            for path in written:
                path.unlink(missing_ok=True)  # those moved into place are gone already
            raise
        return sizes

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

    async def delete_all(self, keys: Sequence[str]) -> None:
        for key in keys:
            await self.delete(key)

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


def _write_synced(path: Path, data: bytes) -> int:
    with path.open("wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())
    return len(data)


def _sync(path: Path) -> int:
    """Sync the file at ``path`` to disk; its size."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
