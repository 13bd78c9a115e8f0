"""``fourcorner``: serve, worker, migrate, token."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

from aiohttp import web

from adapters import private
from adapters.pki.sealing import KEYS_DIR
from adapters.pki.testpki import PKI_DIR
from entrypoints.config import Settings
from entrypoints.container import BLOBS_DIR, build_container, migrate_data, run_workers, web_app
from entrypoints.http.app import json_log_formatter

# What the service keeps in its data dir besides the SQLite files: the token and at-rest
# keys, the test PKI and the blob store.
OWNED_DIRS = (KEYS_DIR, PKI_DIR, BLOBS_DIR)


def _logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(json_log_formatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)


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
        owned = private.tighten([data_dir / name for name in OWNED_DIRS], below=True)
        done = private.Tightened(done.changed + owned.changed, done.failed + owned.failed)
    if done.changed:
        log.warning(
            "files of the service were readable by other users: tightened to folders 0700, "
            "files 0600",
            extra={"data_dir": str(data_dir), "tightened": len(done.changed)},
        )
    for path, reason in done.failed:
        log.error(
            "cannot make a file private to the service's user",
            extra={"path": str(path), "reason": reason},
        )


def serve(settings: Settings) -> None:
    container = build_container(settings)
    # a coroutine: run_app awaits it inside its own loop
    app = web_app(container, workers=settings.workers)
    logging.getLogger("fourcorner").info(
        "serving", extra={"url": settings.base_url, "storage": settings.storage_kind}
    )
    web.run_app(
        app, host=settings.host, port=settings.port, access_log=None, print=None, backlog=1024
    )


def worker(settings: Settings) -> None:
    container = build_container(settings)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        logging.getLogger("fourcorner").info("workers started")
        await run_workers(container, stop)

    asyncio.run(main())


async def _migrate(settings: Settings) -> None:
    container = build_container(settings)
    await container.init_resources()  # opening a storage applies its migrations
    try:
        await migrate_data(container)
    finally:
        await container.shutdown_resources()


def token(settings: Settings, email: str, name: str, superadmin: bool, hours: float) -> str:
    container = build_container(settings)
    return str(
        container.token_authority().issue(
            email, name=name, superadmin=superadmin, ttl=timedelta(hours=hours)
        )
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fourcorner", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("serve", help="serve the API on FOURCORNER_HOST:FOURCORNER_PORT")
    sub.add_parser("worker", help="run the delivery workers only (no API)")
    sub.add_parser("migrate", help="apply the database migrations and exit")
    tok = sub.add_parser("token", help="print a bearer token for the server on this data dir")
    tok.add_argument("--email", required=True)
    tok.add_argument("--name", default="")
    tok.add_argument("--superadmin", action="store_true")
    tok.add_argument("--hours", type=float, default=12.0, help="validity (default 12)")
    args = parser.parse_args(argv)
    try:
        settings = Settings.load()
    except ValueError as e:
        parser.error(str(e))
    _logging(settings.log_level)
    private_files(settings)
    if args.command == "serve":
        serve(settings)
    elif args.command == "worker":
        worker(settings)
    elif args.command == "migrate":
        asyncio.run(_migrate(settings))
    elif args.command == "token":
        if settings.auth_mode != "local":
            parser.error("tokens are minted only in FOURCORNER_AUTH_MODE=local")
        print(token(settings, args.email, args.name, args.superadmin, args.hours))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
