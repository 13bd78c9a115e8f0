"""Making what the service stores its own user's alone, before anything is written (the
umask, and the data dir an earlier version left open to others)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from fourcorner.adapters import private
from fourcorner.entrypoints.config import Settings


def private_files(settings: Settings) -> None:
    """Make what the service stores its own user's alone, before anything is written.

    The umask covers every file created from now on, SQLite's journal files included. A data
    dir that others may enter was made by an earlier version: the data dir and the service's
    own entries in it (``keys/``, ``pki/``, ``blobs/`` and everything in them, the SQLite
    files) are tightened to folders 0700 and files 0600, and the change is logged; nothing
    else in the data dir is touched. A data dir that is already 0700 is not walked, since no
    other user can reach anything below it. The SQLite files are checked wherever
    ``FOURCORNER_DATABASE_URL`` puts them.
    """
    from fourcorner.adapters.pki.sealing import KEYS_DIR
    from fourcorner.adapters.pki.testpki import PKI_DIR
    from fourcorner.entrypoints.adapter_setup import BLOBS_DIR

    os.umask(private.UMASK)
    log = logging.getLogger("fourcorner")
    data_dir = Path(settings.data_dir).resolve()  # a link to the data dir: the dir itself
    below = data_dir.is_dir() and not private.is_private(data_dir)
    private.make_dirs(data_dir)
    files = [data_dir]
    if settings.sqlite_path:
        db = Path(settings.sqlite_path)
        files += [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")]
    done = private.tighten(files, below=False)
    if below:
        owned_dirs = (KEYS_DIR, PKI_DIR, BLOBS_DIR)
        owned = private.tighten([data_dir / name for name in owned_dirs], below=True)
        done = private.Tightened(done.changed + owned.changed, done.failed + owned.failed)
    if done.changed:
        log.warning(
            "files of the service were readable by other users: tightened to folders 0700, "
            "files 0600",
            extra={
                "event": "data_dir.tightened",
                "data_dir": str(data_dir),
                "tightened": len(done.changed),
            },
        )
    for path, reason in done.failed:
        log.error(
            "cannot make a file private to the service's user",
            extra={"event": "data_dir.tighten_failed", "path": str(path), "reason": reason},
        )
