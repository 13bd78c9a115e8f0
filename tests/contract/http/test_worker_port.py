"""The worker's own port (``FOURCORNER_WORKER_PORT``): ``fourcorner worker`` serves
``/healthz``, ``/readyz`` and ``/metrics`` there, behind ``serve``'s edge and nothing else;
``/readyz`` answers 503 promptly while the database is away, while a worker loop has ended,
in the worker as in ``serve`` with its workers, and while a worker started before any
``serve`` waits for the operator's certificates, which it never makes itself.
(``tests/e2e/test_worker_port.py``: the worker process's metrics count its sends.)"""

from __future__ import annotations

import asyncio
import logging
import shutil
import socket
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, nullcontext
from pathlib import Path
from typing import Any

import aiohttp
import psycopg
import pytest

import pg
from fourcorner.adapters.postgres.storage import PING_WAIT
from fourcorner.entrypoints import container as composition
from fourcorner.entrypoints import operator_guard
from fourcorner.entrypoints.config import Settings
from fourcorner.entrypoints.container import build_container, run_workers, settle, web_app
from fourcorner.entrypoints.operator_guard import stored_certificates
from fourcorner.entrypoints.preflight import StartupError
from tcp_proxy import Proxy

from .conftest import _start, settings_for

TOKEN = "metrics-token-0123456789"


@pytest.fixture(autouse=True)
def pki(tmp_path: Path, shared_pki: Path) -> None:
    shutil.copytree(shared_pki, tmp_path / "pki")


async def answered(
    get: Callable[..., Awaitable[tuple[int, Any, float]]], says: Callable[[int, Any], bool]
) -> tuple[int, Any]:
    """``/readyz``'s first answer (status, body) that ``says`` holds of, within 30 seconds:
    the worker is not ready until its loops have started."""
    deadline = time.monotonic() + 30
    while True:
        status, body, _ = await get("/readyz")
        if says(status, body):
            return status, body
        assert time.monotonic() < deadline, (status, body)
        await asyncio.sleep(0.05)


async def serve_started(settings: Settings) -> None:
    """A server process's start-up on ``settings`` (which stores the operator's
    certificates), then its stop."""
    container = build_container(settings)
    await web_app(container)
    await settle(container.shutdown_resources())


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
            await serve_started(settings)
            async with worker(settings) as get:
                assert (await get("/healthz"))[:2] == (200, {"status": "ok"})
                ready = await answered(get, lambda status, _: status != 503)
                assert ready == (200, {"status": "ready"})
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
        status, body = await answered(get, lambda _, body: "starting" not in body["error"])
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


def waited(caplog: Any) -> list[logging.LogRecord]:
    return [r for r in caplog.records if getattr(r, "event", None) == "worker.waiting"]


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
async def test_a_worker_started_before_serve_waits_unready_for_the_operator_s_certificates(
    tmp_path: Path, backend: str, monkeypatch: Any, caplog: Any
):
    """The README's recipe, worker and server on one data dir, the worker first: it makes no
    test PKI, says once that it waits, is not ready, and starts once the server has stored
    the certificates (of the test PKI the server made)."""
    monkeypatch.setattr(composition, "OPERATOR_POLL", 0.05)
    caplog.set_level(logging.INFO, logger="fourcorner.workers")
    data_dir = tmp_path / "one-data-dir"
    data_dir.mkdir(mode=0o700)
    with pg.fresh_schema("fc_wport") if backend == "postgres" else nullcontext("") as schema:
        settings = settings_for(backend, data_dir, schema)
        async with worker(settings) as get:
            for _ in range(3):  # some looks later
                status, body, _ = await get("/readyz")
                assert (status, body["code"]) == (503, "AT-1500"), body
                assert "wait for the operator's certificates" in body["error"], body
                assert "fourcorner serve stores them at its first start" in body["error"], body
                await asyncio.sleep(0.1)
            assert (await get("/healthz"))[0] == 200
            assert not (data_dir / "pki").exists()
            assert stored_certificates(settings) == {}
            assert len(waited(caplog)) == 1

            await serve_started(settings)
            assert await answered(get, lambda status, _: status == 200)
            assert len(waited(caplog)) == 1
            stored = stored_certificates(settings)
            assert len(stored) == 4
            assert {c.cert_pem for c in stored.values()} == {
                (data_dir / "pki" / name).read_text() for name in ("ap.pem", "smp.pem")
            }


async def test_a_waiting_worker_without_the_files_is_refused_once_serve_stores_them(
    tmp_path: Path, monkeypatch: Any
):
    """A worker on a data dir of its own, without a copy of the server's ``pki/``, started
    on a new database: it waits without making a test PKI, and stops with the line that names
    the missing files once the server has stored its certificates."""
    monkeypatch.setattr(composition, "OPERATOR_POLL", 0.05)
    lone = tmp_path / "lone"
    lone.mkdir(mode=0o700)
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    alone = Settings(data_dir=lone, database_url=url).check()
    stop = asyncio.Event()
    running = asyncio.create_task(run_workers(build_container(alone), stop))
    try:
        await asyncio.sleep(0.3)
        assert not running.done()
        assert not (lone / "pki").exists()

        await serve_started(Settings(data_dir=tmp_path, database_url=url).check())
        with pytest.raises(StartupError, match="copy pki/ and keys/") as refused:
            await asyncio.wait_for(running, 30)
        assert f"({lone / 'pki'} does not exist)" in str(refused.value)
        assert not (lone / "pki").exists()
    finally:
        stop.set()
        if not running.done():
            await asyncio.wait_for(running, 30)


async def test_a_waiting_worker_stops_when_told(tmp_path: Path, caplog: Any):
    """Stopped while it waits, the worker ends at once and has made nothing."""
    caplog.set_level(logging.INFO, logger="fourcorner.workers")
    stop = asyncio.Event()
    settings = Settings(data_dir=tmp_path, database_url=f"sqlite:///{tmp_path / 'new.db'}")
    shutil.rmtree(tmp_path / "pki")
    running = asyncio.create_task(run_workers(build_container(settings.check()), stop))
    async with asyncio.timeout(10):
        while not waited(caplog):
            assert not running.done()
            await asyncio.sleep(0.01)
    stop.set()
    await asyncio.wait_for(running, 5)
    assert not (tmp_path / "pki").exists()


async def test_a_waiting_worker_looks_again_after_a_failed_look(
    tmp_path: Path, monkeypatch: Any, caplog: Any
):
    """A look that fails while the worker waits (the database restarts, a connection drops)
    is logged once for each kind of error and made again at the next poll; the worker starts
    once serve has stored the certificates."""
    monkeypatch.setattr(composition, "OPERATOR_POLL", 0.02)
    caplog.set_level(logging.INFO, logger="fourcorner.workers")
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    settings = Settings(data_dir=tmp_path, database_url=url).check()
    shutil.rmtree(tmp_path / "pki")
    read = operator_guard.stored_certificates
    failures: list[Exception] = [
        *(sqlite3.OperationalError("database is locked") for _ in range(3)),
        *(psycopg.OperationalError("connection refused") for _ in range(3)),
    ]
    looks: list[int] = []

    def flaky(settings: Settings, timeout: float = 10.0) -> Any:
        looks.append(len(failures))
        if len(looks) > 1 and failures:  # the first look, at start, finds none
            raise failures.pop(0)
        return read(settings, timeout)

    monkeypatch.setattr(operator_guard, "stored_certificates", flaky)
    stop = asyncio.Event()
    running = asyncio.create_task(run_workers(build_container(settings), stop))
    try:
        async with asyncio.timeout(10):
            while failures or len(looks) < 9:
                assert not running.done(), running.exception()
                await asyncio.sleep(0.01)
        failed = [r for r in caplog.records if getattr(r, "event", "") == "worker.wait_failed"]
        kinds = ["sqlite3.OperationalError", "psycopg.OperationalError"]
        assert [r.problem for r in failed] == kinds
        assert all("cannot be read" in r.getMessage() for r in failed)
        await serve_started(Settings(data_dir=tmp_path, database_url=url).check())
        async with asyncio.timeout(10):
            while not [r for r in caplog.records if getattr(r, "event", "") == "worker.waited"]:
                assert not running.done(), running.exception()
                await asyncio.sleep(0.01)
    finally:
        stop.set()
        await asyncio.wait_for(asyncio.gather(running, return_exceptions=True), 30)
