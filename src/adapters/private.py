"""Files and folders only the service's own user may read: folders 0700, files 0600.

Everything the service keeps (the SQLite database and its journal files, the token and
at-rest keys, the test PKI, document blobs and intake's temporary files) holds records,
invoices or keys. The adapters that create files use ``make_dirs`` and ``create_file`` or
``touch``, so embedders get private files whatever their umask; the CLI also sets the process
umask to 0o077, which covers the files libraries create (SQLite's ``-wal`` and ``-shm`` take
the database file's mode). ``tighten`` takes the group's and others' permissions away from
what an earlier version left readable.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable
from pathlib import Path

import attrs

DIR_MODE = 0o700
FILE_MODE = 0o600
UMASK = 0o077
_OTHERS = 0o077  # the group's and others' permission bits


def make_dirs(path: Path) -> Path:
    """``path`` and each missing folder above it, created 0700 (``mkdir -p`` and
    ``os.makedirs`` give the folders above the umask's default mode)."""
    path = Path(path)
    missing: list[Path] = []
    current = path
    while not current.is_dir():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another process made it meanwhile
            folder.mkdir(mode=DIR_MODE)
    return path


def create_file(path: Path) -> Path:
    """A new empty file at ``path``, 0600; ``FileExistsError`` if there is one already."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
    return path


def touch(path: Path) -> Path:
    """``path`` created empty and 0600 if it does not exist; an existing file is left as it is."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE))
    return path


@attrs.frozen
class Tightened:
    """What ``tighten`` changed, and what it could not change (with the reason)."""

    changed: list[Path] = attrs.field(factory=list)
    failed: list[tuple[Path, str]] = attrs.field(factory=list)


def tighten(roots: Iterable[Path], *, below: bool = True) -> Tightened:
    """Take the group's and others' permissions away from each existing root and, with
    ``below``, from every folder and file under it. Symbolic links are neither changed nor
    followed; a path that cannot be changed (another user's) is reported, not raised."""
    out = Tightened()
    for root in roots:
        if not os.path.lexists(root):
            continue
        _tighten_one(Path(root), out)
        if below and Path(root).is_dir() and not Path(root).is_symlink():
            for folder, dirs, files in os.walk(root, onerror=lambda e: _failed(e, out)):
                for name in (*dirs, *files):
                    _tighten_one(Path(folder) / name, out)
    return out


def _tighten_one(path: Path, out: Tightened) -> None:
    try:
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode) or not info.st_mode & _OTHERS:
            return
        if not (stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)):
            return  # sockets, fifos: not the service's
        path.chmod(stat.S_IMODE(info.st_mode) & ~_OTHERS)
    except OSError as e:
        out.failed.append((path, e.strerror or type(e).__name__))
        return
    out.changed.append(path)


def _failed(error: OSError, out: Tightened) -> None:
    out.failed.append((Path(error.filename or ""), error.strerror or type(error).__name__))


def is_private(path: Path) -> bool:
    """Whether neither the group nor others have any permission on ``path``."""
    return not Path(path).stat().st_mode & _OTHERS
