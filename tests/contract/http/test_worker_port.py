"""The worker's own port (``FOURCORNER_WORKER_PORT``): ``fourcorner worker`` serves
``/healthz``, ``/readyz`` and ``/metrics`` there, behind ``serve``'s edge and nothing else;
``/readyz`` answers 503 promptly while the database is away, and while a worker loop has
ended, in the worker as in ``serve`` with its workers. (``tests/e2e/test_worker_port.py``:
the worker process's metrics count its sends.)"""

from __future__ import annotations

import asyncio
import logging
import shutil
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest

import pg
from fourcorner.adapters.postgres.storage import PING_WAIT
from fourcorner.entrypoints.config import Settings
from fourcorner.entrypoints.container import build_container, run_workers
from tcp_proxy import Proxy

from .conftest import _start, settings_for

TOKEN = "metrics-token-0123456789"


@pytest.fixture(autouse=True)
def pki(tmp_path: Path, shared_pki: Path) -> None:
    shutil.copytree(shared_pki, tmp_path / "pki")


@asynccontextmanager
async def worker(
    settings: Any, **overrides: Any
) -> AsyncIterator[Callable[..., Awaitable[tuple[int, Any, float]]]]:
    """``run_workers`` with a listening socket, as ``fourcorner worker`` runs with a worker
    port; yields ``get(path, **headers)``: the status, body and seconds of one request."""
    sock = socket.create_server(("127.0.0.1", 0))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    stop = asyncio.Event()
    running = asyncio.create_task(run_workers(build_container(settings, **overrides), stop, sock))
    try:
        async with aiohttp.ClientSession() as session:

            async def get(path: str, method: str = "GET", **headers: str) -> tuple[int, Any, float]:
                started = time.monotonic()
                async with session.request(method, base + path, headers=headers) as r:
                    typed = r.content_type == "application/json"
                    body = await r.json() if typed else await r.text()
                    return r.status, body, time.monotonic() - started

            deadline = time.monotonic() + 30
            while True:
                assert not running.done(), running
                try:
                    await get("/healthz")
                    break
                except aiohttp.ClientConnectionError:
                    assert time.monotonic() < deadline, "the worker's port did not answer"
                    await asyncio.sleep(0.05)
            yield get
    finally:
        stop.set()
        await asyncio.wait_for(running, 30)
        sock.close()


@pytest.mark.postgres
async def test_the_worker_port_serves_the_probes_and_metrics(tmp_path: Path):
    pg.require()
    proxy = Proxy.before(pg.URL)
    await proxy.restore()
    try:
        with pg.fresh_schema("fc_wport") as schema:
            settings = Settings(
                data_dir=tmp_path,
                database_url=proxy.url(pg.URL),
                database_schema=schema,
                metrics_token=TOKEN,
            ).check()
            async with worker(settings) as get:
                assert (await get("/healthz"))[:2] == (200, {"status": "ok"})
                assert (await get("/readyz"))[:2] == (200, {"status": "ready"})
                # the metrics with serve's token, and nothing else of serve's
                status, body, _ = await get("/metrics")
                assert (status, body["code"]) == (401, "AT-1018")
                status, text, _ = await get("/metrics", Authorization=f"Bearer {TOKEN}")
                assert status == 200
                assert "fourcorner_queue_depth" in text and "process_cpu_seconds_total" in text
                for path in ("/openapi.json", "/docs", "/orgs", "/as4/x/y"):
                    status, body, _ = await get(path)
                    assert (status, body["code"]) == (404, "AT-1041"), path
                status, body, _ = await get("/readyz", "POST")
                assert status == 405

                await proxy.cut()  # the database's port is closed
                for _ in range(3):
                    status, body, seconds = await get("/readyz")
                    assert (status, body["code"]) == (503, "AT-1500")
                    assert seconds < PING_WAIT + 1
                assert (await get("/healthz"))[0] == 200  # the process is up
                await proxy.restore()
                deadline = time.monotonic() + 30
                while (await get("/readyz"))[0] != 200:
                    assert time.monotonic() < deadline, "the worker did not become ready again"
                    await asyncio.sleep(0.2)
    finally:
        await proxy.cut()


@pytest.mark.postgres
async def test_the_worker_port_counts_failed_authentications_with_serve(
    tmp_path: Path, aiohttp_client: Any
):
    """A worker's port and ``serve`` on one database tell each other their failed
    authentications: the limit's failures at ``serve`` refuse the address at the worker's
    ``/metrics`` too (429, before its token is read)."""
    with pg.fresh_schema("fc_wport") as schema:
        settings = settings_for("postgres", tmp_path, schema, metrics_token=TOKEN)
        api = await _start(settings, aiohttp_client)
        async with worker(settings) as get:
            assert (await get("/metrics", Authorization=f"Bearer {TOKEN}"))[0] == 200
            for n in range(settings.auth_failure_limit):
                status, _ = await api.call("GET", "/users/me", key=f"fck_guess{n:02d}-x")
                assert status == 401
            deadline = time.monotonic() + 2
            while (status := (await get("/metrics", Authorization=f"Bearer {TOKEN}"))[0]) == 200:
                assert time.monotonic() < deadline, "the worker did not hear serve's failures"
                await asyncio.sleep(0.02)
            assert status == 429
        await api.client.close()


class Returning:
    """A worker loop that ends at once, as one must not while its process runs."""

    async def run(self, stop: asyncio.Event) -> None:
        return None


class Raising:
    """A worker loop that meets an error it does not expect."""

    async def run(self, stop: asyncio.Event) -> None:
        raise RuntimeError("a defect in a worker loop")


async def test_the_worker_is_not_ready_once_a_loop_has_ended(tmp_path: Path):
    settings = settings_for("memory", tmp_path)
    async with worker(settings, directory_worker=Returning()) as get:
        status, body, _ = await get("/readyz")
        assert (status, body["code"]) == (503, "AT-1500")
        assert "worker loop" in body["error"]
        assert (await get("/healthz"))[0] == 200


async def test_serve_with_its_workers_is_not_ready_once_a_loop_has_failed(
    tmp_path: Path, aiohttp_client: Any, caplog: Any
):
    caplog.set_level(logging.ERROR, logger="fourcorner.workers")
    api = await _start(
        settings_for("memory", tmp_path), aiohttp_client, workers=True, directory_worker=Raising()
    )
    # the loops start with the app, and the failing one ends: waited for as its log record
    async with asyncio.timeout(10):
        while True:
            if [r for r in caplog.records if getattr(r, "event", None) == "worker.ended"]:
                break
            await asyncio.sleep(0.01)
    status, body = await api.call("GET", "/readyz")
    assert (status, body["code"]) == (503, "AT-1500")
    (ended,) = [r for r in caplog.records if getattr(r, "event", None) == "worker.ended"]
    assert ended.loop == "Raising" and "a defect" in str(ended.exc_info[1])
    # serve without workers runs no loop: ready
    plain = await _start(settings_for("memory", tmp_path), aiohttp_client)
    assert await plain.call("GET", "/readyz") == (200, {"status": "ready"})
