"""The local side of every blob store: a folder of uploads being streamed in (``incoming``),
and the helpers the stores share to read files in pieces.

An upload is streamed to a fresh ``<32 hex digits>.part`` file here (0600, in a 0700 folder),
then adopted by the store (moved into place, or copied into the database and removed) or
removed. ``discard`` removes the ones a crash or a lost client left behind, once old enough;
a store that copies blobs out to local files (``local``) makes them here too.
"""

from __future__ import annotations

import asyncio
import os
import re
import uuid
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path

from fourcorner.adapters.private import create_file, make_dirs

CHUNK = 1024 * 1024  # the pieces blobs are read, written and stored in
_INCOMING = re.compile(r"[0-9a-f]{32}\.part")


class Spool:
    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

    def incoming(self) -> Path:
        """A fresh, empty file (0600) in the folder, created with the folder if need be."""
        make_dirs(self.folder)
        return create_file(self.folder / f"{uuid.uuid4().hex}.part")

    async def discard(self, written_before: datetime) -> int:
        """Remove the files ``incoming`` made that were last written before
        ``written_before``; returns how many."""
        stale = await asyncio.to_thread(older, self.folder, written_before.timestamp(), _INCOMING)
        for name in stale:
            (self.folder / name).unlink(missing_ok=True)
        return len(stale)


def older(folder: Path, cutoff: float, names: re.Pattern[str]) -> list[str]:
    """The names of the regular files in ``folder`` matching ``names`` and last modified
    before ``cutoff`` (seconds since the epoch)."""
    found = []
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return []
    for entry in entries:
        if not names.fullmatch(entry.name):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue  # removed meanwhile
        if entry.is_file(follow_symlinks=False) and info.st_mtime < cutoff:
            found.append(entry.name)
    return found


async def file_chunks(path: Path) -> AsyncIterator[bytes]:
    """The file's content in pieces of at most ``CHUNK`` bytes, each read off the event loop;
    ``FileNotFoundError`` at the first piece when there is no such file."""
    file = await asyncio.to_thread(Path(path).open, "rb")
    try:
        while piece := await asyncio.to_thread(file.read, CHUNK):
            yield piece
    finally:
        file.close()
