"""The lingering close: an answer given before the request's body has arrived whole (no such
access point, a body over the limit, no credentials) is read by a client that is still
sending, every time; the server then reads and drops what the client goes on sending, within
bounds of time and bytes, without keeping it, and closes the connection."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestServer

from fourcorner.entrypoints.container import build_container, web_app
from fourcorner.entrypoints.http.lingering import LINGER, Linger
from uploads import MiB, upload

from .conftest import GuardedTestServer, settings_for


class Served:
    def __init__(self, server: TestServer, token: str) -> None:
        self.server = server
        self.token = token
        self.port = int(server.port or 0)

    def connections(self) -> int:
        assert self.server.runner is not None and self.server.runner.server is not None
        return len(self.server.runner.server.connections)


@pytest.fixture
async def serve(tmp_path: Path, shared_pki: Path, validator: Any) -> AsyncIterator[Any]:
    """``await serve(Linger(...))``: the service (in memory) with those lingering bounds."""
    servers: list[TestServer] = []

    async def start(bounds: Linger) -> Served:
        data = tmp_path / f"s{len(servers)}"
        shutil.copytree(shared_pki, data / "pki")
        container = build_container(settings_for("memory", data), validator=validator)
        app = await web_app(container)
        app[LINGER] = bounds
        server = GuardedTestServer(app)
        await server.start_server()
        servers.append(server)
        token = container.token_authority().issue("ann@example.com", name="Ann")
        return Served(server, token)

    yield start
    for server in servers:
        await server.close()


def unknown_access_point() -> str:
    return f"/as4/{uuid.uuid4()}/{uuid.uuid4()}"


async def test_refusals_of_big_bodies_are_read_every_time(serve: Any) -> None:
    served = await serve(Linger())
    size, bearer = 50 * MiB, f"Authorization: Bearer {served.token}\r\n"
    for _ in range(20):
        results = await asyncio.gather(
            upload(served.port, unknown_access_point(), size),
            upload(served.port, "/orgs", size, headers=bearer),  # declared over the limit
            upload(served.port, "/orgs", size, headers=bearer, chunked=True),  # read to it
            upload(served.port, "/orgs", size),  # no credentials
            upload(served.port, unknown_access_point(), size, pause=0.2),
        )
        assert [status for status, _, _ in results] == [404, 413, 413, 401, 404]
        for _, sent, whole in results:
            # the server read at most its bound away (the rest sat in the sockets' buffers)
            assert not whole and sent < 32 * MiB + 16 * MiB
    await asyncio.sleep(0.1)
    assert served.connections() == 0


async def closed_after(served: Served, started: float, within: float) -> float:
    """Seconds from ``started`` until the server has closed every connection."""
    while served.connections():
        assert time.monotonic() - started < within, "the connection was not closed in time"
        await asyncio.sleep(0.01)
    return time.monotonic() - started


async def refused(served: Served) -> tuple[asyncio.StreamWriter, float]:
    """A connection that announced 10 MiB to no access point, sent 1 KiB and read the 404:
    ``(its writer, when the 404 was read)``."""
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    started = time.monotonic()
    writer.write(
        f"POST {unknown_access_point()} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Length: {10 * MiB}\r\n\r\n".encode()
        + b"\0" * 1024
    )
    assert (await reader.readline()).startswith(b"HTTP/1.1 404 ")
    answered = time.monotonic()
    assert answered - started < 0.5, "the answer waited for the lingering"
    # the end of the stream comes after the answer: the server shut its sending side
    assert b"Connection: close" in await asyncio.wait_for(reader.read(), 0.5)
    return writer, answered


async def test_a_slow_sender_is_cut_off_after_the_lingering_time(serve: Any) -> None:
    served = await serve(Linger(total=1.5, idle=1.0))
    writer, answered = await refused(served)
    assert served.connections() == 1

    async def trickle() -> None:  # a byte every 0.1 s: never idle for long
        with contextlib.suppress(ConnectionError):
            while True:
                writer.write(b"\0")
                await writer.drain()
                await asyncio.sleep(0.1)

    sending = asyncio.create_task(trickle())
    took = await closed_after(served, answered, within=3.0)
    sending.cancel()
    writer.close()
    assert 1.2 < took < 2.5, f"closed {took:.2f} s after the answer"


async def test_a_silent_sender_is_cut_off_after_the_idle_time(serve: Any) -> None:
    served = await serve(Linger(total=30.0, idle=0.5))
    writer, answered = await refused(served)
    assert served.connections() == 1
    took = await closed_after(served, answered, within=3.0)
    writer.close()
    assert 0.3 < took < 1.5, f"closed {took:.2f} s after the answer"


def restart_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # the peak restarts from now


def peak_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc/self/status")


async def test_the_bytes_read_away_are_not_kept(serve: Any) -> None:
    # bounds that let the server read every body away whole: 4 × 100 MiB through it
    served = await serve(Linger(total=60.0, idle=5.0, max_bytes=1024 * MiB))
    size = 100 * MiB
    restart_peak()
    before = peak_kib()
    results = await asyncio.gather(
        *(upload(served.port, unknown_access_point(), size) for _ in "abcd")
    )
    grew = (peak_kib() - before) * 1024
    assert results == [(404, size, True)] * 4  # read away whole, the connections closed cleanly
    assert grew < 24 * MiB, f"peak RSS grew {grew / MiB:.1f} MiB for 400 MiB read away"


async def test_a_refused_expectation_with_its_body_on_the_way_is_answered_within_bounds(
    serve: Any,
) -> None:
    """An ``Expect`` other than ``100-continue`` on a request whose body is still coming: 417 in
    the service's shape at once, then the lingering's bounds, as any early answer."""
    served = await serve(Linger(total=30.0, idle=0.5))
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    started = time.monotonic()
    writer.write(
        f"POST /orgs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {served.token}\r\n"
        f"Expect: a-miracle\r\nContent-Type: application/json\r\n"
        f"Content-Length: {10 * MiB}\r\n\r\n".encode()
        + b"{"
    )
    assert (await reader.readline()).startswith(b"HTTP/1.1 417 ")
    answered = time.monotonic()
    assert answered - started < 0.5, "the answer waited for the body"
    rest = await asyncio.wait_for(reader.read(), 0.5)
    assert b"Connection: close" in rest and b'"AT-1043"' in rest
    took = await closed_after(served, answered, within=3.0)
    writer.close()
    assert took < 1.5, f"closed {took:.2f} s after the answer (idle bound 0.5 s)"
