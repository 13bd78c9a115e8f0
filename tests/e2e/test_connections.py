"""The bounds of ``fourcorner serve`` on connections. It closes a connection that does not send
a whole request head within ``FOURCORNER_HTTP_IDLE_SECONDS``: one that sends nothing, one that
dribbles a head, one idle after its answer; a request whose body takes longer than that to
arrive is answered (the bound is on the head: the body has bounds of its own). One client
address has at most ``FOURCORNER_HTTP_CONNECTIONS_PER_ADDRESS`` connections open."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest

from .test_serve import Server, free_port

pytestmark = pytest.mark.slow
IDLE = 1.0
PER_ADDRESS = 3


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Server:
    server = Server(tmp_path_factory.mktemp("idle"), free_port())
    server.env["FOURCORNER_HTTP_IDLE_SECONDS"] = str(IDLE)
    server.env["FOURCORNER_HTTP_CONNECTIONS_PER_ADDRESS"] = str(PER_ADDRESS)
    server.start()
    yield server
    server.stop()


def connect(server: Server, source: str = "127.0.0.1") -> socket.socket:
    port = int(server.base.rsplit(":", 1)[1])
    conn = socket.create_connection(("127.0.0.1", port), source_address=(source, 0))
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


def ready(conn: socket.socket) -> bytes:
    conn.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
    return conn.recv(65536)


def test_one_address_has_at_most_so_many_connections_open(server: Server) -> None:
    held = [connect(server) for _ in range(PER_ADDRESS)]
    try:
        for conn in held:
            assert ready(conn).startswith(b"HTTP/1.1 200")
        # one more is answered at once, before it sends anything, and closed
        with connect(server) as extra:
            answer = b""
            while chunk := extra.recv(65536):
                answer += chunk
        head, _, body = answer.partition(b"\r\n\r\n")
        status, *lines = head.decode().split("\r\n")
        headers = dict(line.split(": ", 1) for line in lines)
        assert status == "HTTP/1.1 503 Service Unavailable", head
        assert headers["Retry-After"] == "5" and headers["Connection"] == "close"
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert int(headers["Content-Length"]) == len(body)
        assert json.loads(body)["code"] == "AT-1506"
        # another address is not held back by this one's connections
        with connect(server, source="127.0.0.2") as other:
            assert ready(other).startswith(b"HTTP/1.1 200")
        # the connections held still serve; one closed makes room for one more
        assert ready(held[0]).startswith(b"HTTP/1.1 200")
        held.pop().close()
        deadline = time.monotonic() + 5
        while True:  # the server notices the close as soon as it reads the end
            with connect(server) as again:
                answer = ready(again)
            if answer.startswith(b"HTTP/1.1 200") or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    finally:
        for conn in held:
            conn.close()
