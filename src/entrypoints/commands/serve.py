"""``fourcorner serve`` and ``fourcorner worker``: the checks before they start (the data
dir, the key and certificate files, the database), and the lines they log when they start
(with the configuration, without a secret) and stop."""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
from pathlib import Path
from typing import Any

import attrs

from fourcorner.entrypoints import preflight
from fourcorner.entrypoints.commands.common import DB_WAIT, database_location, package_version, say
from fourcorner.entrypoints.config import Settings


def _materials(settings: Settings) -> None:
    """The at-rest key file and the configured certificate files can be used."""
    from fourcorner.entrypoints import operator

    preflight.at_rest_key_file(settings)
    if settings.trust_anchors_file:
        operator.trust_anchors(settings)
    if settings.operator_certs_dir:
        for environment in ("test", "prod"):
            for name in operator.OPERATOR_FILES:
                operator.operator_file(settings, environment, name)


def serve(settings: Settings, db_wait: float = DB_WAIT) -> None:
    import uvloop

    from fourcorner.entrypoints.container import build_container
    from fourcorner.entrypoints.http import server

    preflight.data_dir(settings)
    _materials(settings)
    sock = preflight.listening_socket(settings)
    try:
        preflight.wait_for_database(settings, db_wait, say)
        container = build_container(settings)
        # a coroutine: serve awaits it inside its own loop
        app = _app(container, settings)
        _started("serve", settings)
        try:
            # uvloop's event loop, as the workers': 12 % less of serve's CPU per transaction
            # through the four-corner loop (bench_transactions.py, three rounds in turn); the
            # heap settled once the app is built in it (the modules, the container and the
            # app frozen), before the first request
            uvloop.run(
                server.serve(
                    app, sock=sock, edge=server.Edge.of(settings), before_serving=settle_heap
                )
            )
        finally:
            _stopped("serve")
    finally:
        sock.close()


async def _app(container: Any, settings: Settings) -> Any:
    """The app (``web_app``), then the token signing key: it exists from the start, for
    ``fourcorner token`` to sign with, but only once the app's checks let the process start
    (a refused process leaves the data dir without a key of its own)."""
    from fourcorner.entrypoints.container import web_app

    app = await web_app(container, workers=settings.workers)
    if settings.auth_mode == "local":
        container.token_authority().key_id()
    return app


# never in the configuration summary: the at-rest key, and whatever names a secret
_SECRET = ("key", "secret", "password", "token")


def configuration_summary(settings: Settings) -> dict[str, Any]:
    """The settings an operator needs to read in the log, without a secret: the database
    URL as its address (no user, no password), and the values in effect of settings whose
    empty value means a default worked out from others (``discovery``, ``ap_host``,
    ``blob_store``)."""
    summary: dict[str, Any] = {"database": database_location(settings), "url": settings.base_url}
    for name, value in attrs.asdict(settings).items():
        if name == "database_url" or any(word in name for word in _SECRET):
            continue
        summary[name] = str(value) if isinstance(value, Path) else value
    summary |= {
        "discovery": settings.discovery_mode,
        "ap_host": settings.access_point_host,
        "blob_store": settings.blob_kind,
    }
    return summary


# young collections after this many new objects (Python's default: 700)
YOUNG_COLLECTION_THRESHOLD = 10_000


def settle_heap() -> None:
    """Tune the cyclic garbage collector for a process that runs for a long time once it has
    started. The objects built at start-up (modules, the container, compiled codecs, and
    for ``serve`` the app; about 100,000 of them) are frozen, so full collections no longer
    walk them all, and young collections run after ``YOUNG_COLLECTION_THRESHOLD`` new objects
    instead of 700. The
    webhook worker allocates a few hundred objects per delivery; with the default settings
    the collector took about 15 % of its CPU (``bench_webhooks.py``, README); ``serve`` does
    the same, 2–4 % less of its CPU per transaction through the loop. Garbage without
    cycles is freed by reference counting as before; cyclic garbage waits a little longer."""
    gc.collect()  # start-up garbage is freed, not frozen
    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, *gc.get_threshold()[1:])


def _started(role: str, settings: Settings) -> None:
    logging.getLogger("fourcorner").info(
        "serving" if role == "serve" else "workers started",
        extra={
            "event": "service.start",
            "role": role,
            "version": package_version(),
            "storage": settings.storage_kind,
            "configuration": configuration_summary(settings),
        },
    )


def _stopped(role: str) -> None:
    logging.getLogger("fourcorner").info("stopped", extra={"event": "service.stop", "role": role})


def worker(settings: Settings, db_wait: float = DB_WAIT) -> None:
    import uvloop

    from fourcorner.entrypoints.container import build_container, run_workers

    preflight.data_dir(settings)
    _materials(settings)
    # the probes' and metrics' port, when it has one: taken before the wait for the database,
    # as serve's, so that a port in use stops the worker at once
    sock = preflight.listening_socket(settings, "worker_port") if settings.worker_port else None
    try:
        preflight.wait_for_database(settings, db_wait, say)
        container = build_container(settings)
        settle_heap()

        async def main() -> None:
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stop.set)
            _started("worker", settings)
            try:
                await run_workers(container, stop, sock)
            finally:
                _stopped("worker")

        # uvloop's event loop: the workers are mostly event-loop work (a webhook delivery is an
        # HTTP exchange and a share of a few database round trips), which it does with about
        # 40 % fewer instructions per psycopg round trip and 14 % fewer per aiohttp request
        uvloop.run(main())
    finally:
        if sock is not None:
            sock.close()
