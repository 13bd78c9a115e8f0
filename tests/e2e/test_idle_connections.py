"""``fourcorner serve`` closes a connection that does not send a whole request head within
``FOURCORNER_HTTP_IDLE_SECONDS``: one that sends nothing, one that dribbles a head, one idle
after its answer. A request whose body takes longer than that to arrive is answered: the
bound is on the head (the body has bounds of its own)."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from .test_serve import Server, free_port

pytestmark = pytest.mark.slow
IDLE = 1.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Server:
    server = Server(tmp_path_factory.mktemp("idle"), free_port())
    server.env["FOURCORNER_HTTP_IDLE_SECONDS"] = str(IDLE)
    server.start()
    yield server
    server.stop()


def connect(server: Server) -> socket.socket:
    port = int(server.base.rsplit(":", 1)[1])
    conn = socket.create_connection(("127.0.0.1", port))
    conn.settimeout(10 * IDLE)
    return conn


def closed_after(conn: socket.socket, started: float) -> float:
    """Seconds from ``started`` until the server closed ``conn`` (its answers read and
    dropped meanwhile)."""
    while conn.recv(65536):
        pass
    return time.monotonic() - started


def test_a_connection_that_sends_nothing_is_closed(server: Server) -> None:
    started = time.monotonic()
    with connect(server) as conn:
        assert IDLE * 0.5 <= closed_after(conn, started) < IDLE * 5


def test_a_dribbled_head_is_closed_though_bytes_keep_coming(server: Server) -> None:
    started = time.monotonic()
    with connect(server) as conn:
        conn.sendall(b"GET /users/me HTTP/1.1\r\nHost: x\r\n")
        with pytest.raises(OSError):  # the server closed the connection under the dribble
            for _ in range(int(8 * IDLE / 0.2)):
                time.sleep(0.2)
                conn.sendall(b"X")
        # it went no longer than the bound (and the time the client took to notice)
        assert time.monotonic() - started < IDLE * 8


def test_a_connection_idle_after_its_answer_is_closed(server: Server) -> None:
    with connect(server) as conn:
        conn.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = conn.recv(65536)
        assert answer.startswith(b"HTTP/1.1 200")
        started = time.monotonic()
        assert IDLE * 0.5 <= closed_after(conn, started) < IDLE * 5


def test_a_body_slower_than_the_bound_is_answered(server: Server) -> None:
    body = b'{"legalName": "Slow AB"}'
    with connect(server) as conn:
        conn.sendall(
            b"POST /orgs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body)
        )
        for i in range(0, len(body), 8):  # the body over 3 x the bound
            time.sleep(IDLE * 3 / (len(body) / 8))
            conn.sendall(body[i : i + 8])
        answer = conn.recv(65536)
    # an answer, not a closed connection: 401, for no credentials were sent
    assert answer.startswith(b"HTTP/1.1 401"), answer[:200]


def test_the_bound_is_a_checked_setting(tmp_path: Path) -> None:
    server = Server(tmp_path, free_port())
    server.env["FOURCORNER_HTTP_IDLE_SECONDS"] = "0"
    with pytest.raises(AssertionError, match="FOURCORNER_HTTP_IDLE_SECONDS=0 is out of range"):
        server.start()
