"""``fourcorner``: serve, worker, migrate, token."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Sequence
from datetime import timedelta

from entrypoints.config import Settings
from entrypoints.container import build_container, run_workers, web_app
from entrypoints.http import server
from entrypoints.http.app import json_log_formatter


def _logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(json_log_formatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)


def serve(settings: Settings) -> None:
    container = build_container(settings)
    # a coroutine: serve awaits it inside its own loop
    app = web_app(container, workers=settings.workers)
    logging.getLogger("fourcorner").info(
        "serving", extra={"url": settings.base_url, "storage": settings.storage_kind}
    )
    asyncio.run(server.serve(app, host=settings.host, port=settings.port, hsts=settings.https))


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
