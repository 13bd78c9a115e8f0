"""The webhook sender's HTTP/1.1 client (``adapters.webhooks.client``) against peers on
127.0.0.1 that answer with bytes of their own: every framing of an answer gives its status and
the start of its body, kept-alive connections are reused and a closed one replaced, a broken
answer is a failure, and addresses a check refuses are never connected to. Names are resolved
on the event loop (a local name server, a hosts file): one whose name server never answers
holds no thread of the default executor, and delays no other delivery."""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import socket
import ssl
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dns.message
import dns.rrset
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fourcorner.adapters.webhooks import Http1WebhookSender
from fourcorner.adapters.webhooks import client as client_module
from fourcorner.adapters.webhooks.client import MAX_DRAIN, MAX_HEAD, AnswerUnreadable, Http1Client
from fourcorner.adapters.webhooks.names import HostResolver, read_hosts

KEPT = 1024


class Peer:
    """A server that reads each request and writes ``answer(n)`` for the n-th on a
    connection (and closes the connection after it when ``close_after(n)``)."""

    def __init__(self) -> None:
        self.answer: Callable[[int], bytes] = lambda n: b"HTTP/1.1 204 No Content\r\n\r\n"
        self.close_after: Callable[[int], bool] = lambda n: False
        self.requests: list[bytes] = []
        self.connections = 0
        self.open_now = 0
        self.most_open = 0
        self.delay = 0.0
        self.cuts: list[int] = []  # where an answer is cut into writes of its own
        self.url = ""

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.open_now += 1
        self.most_open = max(self.most_open, self.open_now)
        n = 0
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    return
                length = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                self.requests.append(head + await reader.readexactly(length))
                if self.delay:
                    await asyncio.sleep(self.delay)
                answer, at = self.answer(n), 0
                for cut in sorted(self.cuts):
                    writer.write(answer[at:cut])
                    await writer.drain()
                    await asyncio.sleep(0.001)
                    at = max(at, cut)
                writer.write(answer[at:])
                await writer.drain()
                if self.close_after(n):
                    return
                n += 1
        except ConnectionError:
            pass
        finally:
            self.open_now -= 1
            writer.close()


@pytest.fixture
async def peer() -> AsyncIterator[Peer]:
    p = Peer()
    server = await asyncio.start_server(p.serve, "127.0.0.1", 0)
    p.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/in?x=1"
    yield p
    server.close()


@pytest.fixture
async def client() -> AsyncIterator[Http1Client]:
    c = Http1Client(kept=KEPT, check=None)
    yield c
    await c.aclose()


def chunked(body: bytes, sizes: list[int], trailers: bytes = b"") -> bytes:
    out, at = b"", 0
    for size in sizes:
        piece = body[at : at + size]
        if not piece:
            break
        out += b"%x;ext=1\r\n%s\r\n" % (len(piece), piece)
        at += len(piece)
    if at < len(body):
        out += b"%x\r\n%s\r\n" % (len(body) - at, body[at:])
    return out + b"0\r\n" + trailers + b"\r\n"


ONE_PEER = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@ONE_PEER
@given(
    size=st.integers(0, 3 * MAX_DRAIN // 2),
    framing=st.sampled_from(["length", "chunked", "close"]),
    sizes=st.lists(st.integers(1, 5000), max_size=5),
    interim=st.booleans(),
)
async def test_every_framing_gives_the_status_and_the_start_of_the_body(
    peer: Peer, size: int, framing: str, sizes: list[int], interim: bool
) -> None:
    body = bytes(range(256)) * (size // 256) + b"z" * (size % 256)
    head = b"HTTP/1.1 100 Continue\r\n\r\n" if interim else b""
    if framing == "length":
        head += b"HTTP/1.1 201 Created\r\nContent-Length: %d\r\n\r\n%s" % (size, body)
    elif framing == "chunked":
        head += b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
        head += chunked(body, sizes, b"X-Sum: 1\r\n" if sizes else b"")
    else:
        head += b"HTTP/1.1 201 Created\r\nConnection: close\r\n\r\n" + body
    peer.answer = lambda n: head
    peer.close_after = lambda n: framing == "close"
    c = Http1Client(kept=KEPT, check=None)
    try:
        for _ in range(2):  # the second on the kept connection where it was drained
            assert await c.post(peer.url, b"{}", {}) == (201, body[:KEPT], None)
        drained = framing != "close" and size <= MAX_DRAIN
        assert peer.connections == (1 if drained else 2)
    finally:
        await c.aclose()
        peer.connections = 0


@ONE_PEER
@given(
    size=st.integers(0, 3000),
    chunks=st.lists(st.integers(1, 700), max_size=4),
    cuts=st.lists(st.integers(1, 3200), min_size=1, max_size=6),
)
async def test_an_answer_cut_anywhere_reads_the_same(
    peer: Peer, size: int, chunks: list[int], cuts: list[int]
) -> None:
    body = bytes(range(256)) * (size // 256) + b"z" * (size % 256)
    interim = b"HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n"
    answers = [
        interim + b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nX-A: b\r\n\r\n%s" % (size, body),
        interim
        + b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        + chunked(body, chunks, b"X-Sum: 1\r\n"),
    ]
    peer.answer = lambda n: answers[n % 2]
    peer.cuts = cuts
    c = Http1Client(kept=KEPT, check=None)
    try:
        for _ in range(4):  # both framings, twice, on one kept connection
            assert await c.post(peer.url, b"{}", {}) == (200, body[:KEPT], None)
        assert peer.connections == 1
    finally:
        await c.aclose()
        peer.connections = 0


async def test_the_request_is_one_post_with_its_headers_and_length(
    peer: Peer, client: Http1Client
) -> None:
    assert await client.post(peer.url, b'{"a":1}', {"webhook-id": "msg_1"}) == (204, b"", None)
    [request] = peer.requests
    head, body = request.split(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"POST /in?x=1 HTTP/1.1"
    assert set(lines[1:]) == {
        b"host: " + peer.url.split("/")[2].encode(),
        b"webhook-id: msg_1",
        b"content-length: 7",
    }
    assert body == b'{"a":1}'


# a busy endpoint's answers, with the Retry-After field the client gives (the final answer's,
# in its head) and the wait the sender reads from it on a clock stopped at NOW
NOW = datetime(2026, 1, 2, 10, 0, tzinfo=UTC)
BUSY_ANSWERS = [
    (b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 120\r\nContent-Length: 4\r\n\r\nslow", "120"),
    (
        b"HTTP/1.1 503 Unavailable\r\nretry-after:  Fri, 02 Jan 2026 10:01:30 GMT \r\n"
        b"Content-Length: 0\r\n\r\n",
        "Fri, 02 Jan 2026 10:01:30 GMT",
    ),
    (b"HTTP/1.1 429 Slow\r\nRetry-After: 99999999999\r\nContent-Length: 0\r\n\r\n", "99999999999"),
    (b"HTTP/1.1 503 Unavailable\r\nRetry-After: soon\r\nContent-Length: 0\r\n\r\n", "soon"),
    # an interim answer's field is not the answer's, nor is a trailer
    (
        b"HTTP/1.1 100 Continue\r\nRetry-After: 5\r\n\r\n"
        b"HTTP/1.1 503 Unavailable\r\nContent-Length: 0\r\n\r\n",
        None,
    ),
    (
        b"HTTP/1.1 429 Slow\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nRetry-After: 60\r\n\r\n",
        None,
    ),
]


@pytest.mark.parametrize(("answer", "field"), BUSY_ANSWERS)
async def test_a_busy_answer_gives_its_retry_after_and_the_sender_reads_the_wait(
    peer: Peer, client: Http1Client, answer: bytes, field: str | None
) -> None:
    """The client gives the final answer's ``Retry-After`` as sent; the sender reads it (as
    ``retry_after.asked_wait`` does: at most an hour, a value that does not read ignored) on a
    429 or 503, which it reports as busy."""
    peer.answer = lambda n: answer
    status, _, given = await client.post(peer.url, b"{}", {})
    assert (status in (429, 503), given) == (True, field)
    sender = Http1WebhookSender(allow_private_targets=True, clock=lambda: NOW)
    try:
        result = await sender.send(peer.url, b"{}", {})
    finally:
        await sender.aclose()
    asked = {
        "120": timedelta(seconds=120),
        "Fri, 02 Jan 2026 10:01:30 GMT": timedelta(seconds=90),
        "99999999999": timedelta(hours=1),
    }.get(field or "")
    assert (result.status_code, result.busy, result.retry_after) == (status, True, asked)


@pytest.mark.parametrize("status", [200, 204, 400, 404, 500, 502])
async def test_only_429_and_503_are_busy_whatever_retry_after_they_carry(
    peer: Peer, status: int
) -> None:
    peer.answer = lambda n: (
        b"HTTP/1.1 %d X\r\nRetry-After: 120\r\nContent-Length: 0\r\n\r\n" % status
    )
    sender = Http1WebhookSender(allow_private_targets=True, clock=lambda: NOW)
    try:
        result = await sender.send(peer.url, b"{}", {})
    finally:
        await sender.aclose()
    assert (result.status_code, result.busy, result.retry_after) == (status, False, None)


@pytest.mark.parametrize(
    ("userinfo", "pair"),
    [
        ("user:pw@", b"user:pw"),
        ("us%20er:p%3Aw%C3%A9@", "us er:p:w\u00e9".encode()),
        ("user@", b"user:"),
        (":pw@", b":pw"),
    ],
)
async def test_a_urls_user_and_password_are_sent_as_basic_credentials(
    peer: Peer, client: Http1Client, userinfo: str, pair: bytes
) -> None:
    url = peer.url.replace("http://", f"http://{userinfo}")
    assert await client.post(url, b"{}", {}) == (204, b"", None)
    [request] = peer.requests
    lines = request.split(b"\r\n\r\n")[0].split(b"\r\n")
    assert b"authorization: Basic " + base64.b64encode(pair) in lines
    assert lines[0] == b"POST /in?x=1 HTTP/1.1"
    assert not any(userinfo.encode() in line for line in lines)


async def test_a_url_without_a_user_sends_no_credentials(peer: Peer, client: Http1Client) -> None:
    await client.post(peer.url, b"{}", {})
    assert b"authorization" not in peer.requests[0].lower()


async def test_a_kept_connection_the_peer_closed_is_replaced(
    peer: Peer, client: Http1Client
) -> None:
    peer.close_after = lambda n: True  # closes each connection after answering, unannounced
    for _ in range(3):
        assert await client.post(peer.url, b"{}", {}) == (204, b"", None)
        async with asyncio.timeout(10):
            while peer.open_now:  # noqa: ASYNC110 (the peer closing it, which sets nothing)
                await asyncio.sleep(0.001)
    assert peer.connections == 3 and len(peer.requests) == 3


async def test_a_kept_connection_closed_unanswered_is_tried_once_more_on_a_new_one(
    peer: Peer, client: Http1Client
) -> None:
    # the second request on a connection is read and left unanswered, the connection closed
    peer.answer = lambda n: b"" if n else b"HTTP/1.1 204 No Content\r\n\r\n"
    peer.close_after = lambda n: n > 0
    assert await client.post(peer.url, b"{}", {}) == (204, b"", None)
    assert await client.post(peer.url, b"{}", {}) == (204, b"", None)
    assert peer.connections == 2 and len(peer.requests) == 3  # the second one sent twice


async def test_a_peer_that_closes_unanswered_is_a_failure(peer: Peer, client: Http1Client) -> None:
    peer.answer = lambda n: b""
    peer.close_after = lambda n: True
    with pytest.raises(ConnectionResetError):
        await client.post(peer.url, b"{}", {})


@pytest.mark.parametrize(
    "answer",
    [
        b"SMTP ready\r\n\r\n",
        b"HTTP/1.1 2000 OK\r\n\r\n",
        b"HTTP/1.1 abc OK\r\n\r\n",
        b"HTTP/1.1 101 Switching\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
        b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n",
        b"HTTP/1.1 200 OK\r\nX: " + b"y" * (MAX_HEAD + 1) + b"\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",  # then closed
        b"HTTP/2.0 200 OK\r\n\r\n",
        b"HTTP/1.1 099 OK\r\n\r\n",
        b"HTTP/1.1 100 Continue\r\n\r\n" * 3000 + b"HTTP/1.1 200 OK\r\n\r\n",  # heads > 64k
    ],
)
async def test_a_broken_answer_is_a_failure(peer: Peer, client: Http1Client, answer: bytes) -> None:
    peer.answer = lambda n: answer
    peer.close_after = lambda n: True
    with pytest.raises(AnswerUnreadable):
        await client.post(peer.url, b"{}", {})


@pytest.mark.parametrize(
    ("answer", "kept_alive"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nab", True),
        (
            b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\n"
            b"Content-Length: 2\r\n\r\nab",
            True,
        ),
        (b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nab", True),
        (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nab", False),
        (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nab", False),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nabc", False),  # a byte past it
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nabHTTP/1.1 200 OK\r\n\r\n", False),
    ],
)
async def test_a_connection_is_kept_only_when_the_answer_allows_it(
    peer: Peer, client: Http1Client, answer: bytes, kept_alive: bool
) -> None:
    peer.answer = lambda n: answer
    for _ in range(2):
        assert await client.post(peer.url, b"{}", {}) == (200, b"ab", None)
    assert peer.connections == (1 if kept_alive else 2)


async def test_endless_trailers_are_not_read_to_their_end(peer: Peer, client: Http1Client) -> None:
    # a chunked body whose trailer never ends, the connection left open
    trailer = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\nX-T: "
    peer.answer = lambda n: trailer + b"y" * (4 * MAX_DRAIN)
    async with asyncio.timeout(10):
        for _ in range(2):
            assert await client.post(peer.url, b"{}", {}) == (200, b"a", None)
    assert peer.connections == 2


async def test_a_header_with_a_line_break_is_not_sent(peer: Peer, client: Http1Client) -> None:
    for value in ("a\r\nx-evil: 1", "a\nb", "a\rb"):
        with pytest.raises(ValueError):
            await client.post(peer.url, b"{}", {"x": value})
    assert peer.requests == []


async def test_at_most_limit_connections_are_open(peer: Peer) -> None:
    peer.delay = 0.05
    c = Http1Client(limit=2, kept=KEPT, check=None)
    try:
        answers = await asyncio.gather(*(c.post(peer.url, b"{}", {}) for _ in range(6)))
    finally:
        await c.aclose()
    assert answers == [(204, b"", None)] * 6
    assert peer.most_open <= 2 and peer.connections == 2


async def test_parsed_urls_kept_are_bounded_and_each_url_still_reaches_its_path(
    peer: Peer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # every distinct webhook URL is parsed once and kept: the kept ones stay at most
    # _MAX_TARGETS however many URLs are sent to, and a URL dropped from them is parsed again
    monkeypatch.setattr(client_module, "_MAX_TARGETS", 3)
    c = Http1Client(kept=KEPT, check=None)
    base = peer.url.split("?")[0]
    try:
        for n in range(10):
            assert await c.post(f"{base}?n={n}", b"{}", {}) == (204, b"", None)
            assert len(c._targets) <= 3
        assert await c.post(f"{base}?n=0", b"{}", {}) == (204, b"", None)
    finally:
        await c.aclose()
    paths = [r.split(b" ")[1] for r in peer.requests]
    assert paths == [f"/in?n={n}".encode() for n in [*range(10), 0]]
    assert peer.connections == 1  # one origin: the connection is kept whatever the path


async def test_no_origin_is_kept_once_its_connections_are_gone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Kept-alive connections to 50 origins: those their peers close are forgotten at once,
    their origins with them; those idle for longer than ``IDLE_SECONDS`` are closed and
    forgotten by the sweep after a later request."""
    monkeypatch.setattr(client_module, "IDLE_SECONDS", 2.0)
    peers: list[Peer] = []
    servers: list[asyncio.Server] = []
    for n in range(50):
        p = Peer()
        p.close_after = (lambda n: True) if n % 2 else (lambda n: False)
        servers.append(await asyncio.start_server(p.serve, "127.0.0.1", 0))
        p.url = f"http://127.0.0.1:{servers[-1].sockets[0].getsockname()[1]}/in"
        peers.append(p)
    staying = {("http", "127.0.0.1", int(p.url.split(":")[2].split("/")[0])) for p in peers[::2]}
    c = Http1Client(kept=KEPT, check=None)
    try:
        for p in peers:
            assert await c.post(p.url, b"{}", {}) == (204, b"", None)
        for _ in range(200):
            if len(c._open) == 25:
                break
            await asyncio.sleep(0.01)
        assert set(c._idle) == staying and len(c._open) == 25
        await asyncio.sleep(2.1)
        assert await c.post(peers[0].url, b"{}", {}) == (204, b"", None)
        assert set(c._idle) == {("http", "127.0.0.1", int(peers[0].url.split(":")[2][:-3]))}
        assert len(c._open) == 1
    finally:
        await c.aclose()
        for server in servers:
            server.close()
    assert c._idle == {} and c._open == set()


async def test_refused_addresses_are_never_connected_to(peer: Peer) -> None:
    port = peer.url.split(":")[2].split("/")[0]
    loopback = {"127.0.0.1", "::1"}
    # a name allowed as such that resolves only to refused addresses (DNS rebinding)
    rebinding = Http1Client(kept=KEPT, check=lambda a: "refused" if a in loopback else None)
    literal = Http1Client(kept=KEPT, check=lambda a: "refused" if a in loopback else None)
    try:
        with pytest.raises(OSError, match="resolves only to addresses not allowed"):
            await rebinding.post(f"http://localhost:{port}/in", b"{}", {})
        with pytest.raises(OSError, match="refused"):
            await literal.post(peer.url, b"{}", {})
    finally:
        await rebinding.aclose()
        await literal.aclose()
    assert peer.connections == 0


def _certificate(tmp: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key, as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "receiver")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.IPv4Address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp / "cert.pem", tmp / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


async def test_https_is_verified_and_then_kept_alive(tmp_path: Path) -> None:
    cert, key = _certificate(tmp_path)
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    served.load_cert_chain(cert, key)
    p = Peer()
    server = await asyncio.start_server(p.serve, "127.0.0.1", 0, ssl=served)
    url = f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}/in"
    untrusting = Http1Client(kept=KEPT, check=None)  # the system's authorities only
    trusting = Http1Client(kept=KEPT, check=None, tls=ssl.create_default_context(cafile=cert))
    try:
        with pytest.raises(ssl.SSLCertVerificationError):
            await untrusting.post(url, b"{}", {})
        assert p.requests == []
        for _ in range(3):
            assert await trusting.post(url, b"{}", {}) == (204, b"", None)
        assert (
            len(p.requests) == 3 and p.connections == 1
        )  # one kept (the refused one never served)
    finally:
        await untrusting.aclose()
        await trusting.aclose()
        server.close()


class NameServer(asyncio.DatagramProtocol):
    """A name server on 127.0.0.1 (UDP) answering A and AAAA queries from ``records`` (name:
    addresses); a name under ``silent`` gets no answer at all, any other none of a kind."""

    def __init__(self, records: dict[str, list[str]], silent: str = "hang.example.") -> None:
        self.records = records
        self.silent = silent
        self.asked: list[str] = []
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        query = dns.message.from_wire(data)
        question = query.question[0]
        name = question.name.to_text()
        self.asked.append(name)
        if name.endswith(self.silent):
            return
        answer = dns.message.make_response(query)
        wanted = "A" if question.rdtype == dns.rdatatype.A else "AAAA"
        found = [a for a in self.records.get(name, []) if (":" in a) == (wanted == "AAAA")]
        if found:
            answer.answer.append(dns.rrset.from_text(name, 60, "IN", wanted, *found))
        assert self.transport is not None
        self.transport.sendto(answer.to_wire(), addr)


@pytest.fixture
async def name_server() -> AsyncIterator[tuple[NameServer, int]]:
    server = NameServer({})
    transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(
        lambda: server, local_addr=("127.0.0.1", 0)
    )
    yield server, transport.get_extra_info("sockname")[1]
    transport.close()


async def test_a_name_server_that_never_answers_holds_no_shared_thread(
    peer: Peer, name_server: tuple[NameServer, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """40 deliveries to names under a zone whose name server never answers each time out;
    meanwhile another delivery is answered at once, and after them the default executor
    (which blob reads, upload spooling and AS4 builds wait for) is free at once. The system's
    getaddrinfo, which would hang in those threads, is not called for them."""
    server, port = name_server
    real, threaded = socket.getaddrinfo, []

    def hanging(host: object, *args: object, **kwargs: object) -> object:
        if isinstance(host, str) and host.endswith(".hang.example"):
            threaded.append(host)
            time.sleep(3.0)
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        return real(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", hanging)
    resolver = HostResolver(lifetime=5.0, nameservers=[("127.0.0.1", port)])
    sender = Http1WebhookSender(timeout=0.3, allow_private_targets=True, resolver=resolver)
    try:
        hung = [sender.send(f"https://h{i}.hang.example/in", b"{}", {}) for i in range(40)]
        started = time.monotonic()
        other, *results = await asyncio.gather(sender.send(peer.url, b"{}", {}), *hung)
        took = time.monotonic() - started
    finally:
        await sender.aclose()
    assert other.status_code == 204 and other.duration_ms < 300
    assert {r.error for r in results} == {"timed out"} and took < 2.0
    assert threaded == [] and len(server.asked) >= 40
    started = time.monotonic()
    await asyncio.to_thread(lambda: None)
    assert time.monotonic() - started < 0.5


async def test_names_resolve_by_the_hosts_file_then_the_name_servers_and_are_checked(
    peer: Peer, name_server: tuple[NameServer, int], tmp_path: Path
) -> None:
    """A hosts file's name, a name under ``localhost`` and the name servers' A and AAAA
    records reach the peer; an IPv4 literal in a form ``inet_aton`` reads needs no lookup;
    a name the name servers know no address of is a failure; and every address found passes
    the check before it is connected to (a public name resolving to loopback is refused)."""
    server, port = name_server
    server.records = {
        "receiver.test.": ["127.0.0.1"],
        "rebound.example.": ["127.0.0.1", "::1"],
    }
    hosts = tmp_path / "hosts"
    hosts.write_text("# names\n127.0.0.1  local.receiver  other # a comment\n")
    resolver = HostResolver(lifetime=2.0, nameservers=[("127.0.0.1", port)], hosts_file=str(hosts))
    peer_port = peer.url.split(":")[2].split("/")[0]
    c = Http1Client(kept=KEPT, check=None, resolver=resolver)
    loopback = {"127.0.0.1", "::1"}
    checked = Http1Client(
        kept=KEPT, check=lambda a: "refused" if a in loopback else None, resolver=resolver
    )
    try:
        for host in ("local.receiver", "api.localhost", "receiver.test", "127.1", "0x7f.0.0.1"):
            assert await c.post(f"http://{host}:{peer_port}/in", b"{}", {}) == (204, b"", None)
            await c.aclose()  # a new connection for each, so each name is resolved
        with pytest.raises(OSError, match=r"unknown\.example has no address"):
            await c.post(f"http://unknown.example:{peer_port}/in", b"{}", {})
        with pytest.raises(OSError, match="resolves only to addresses not allowed"):
            await checked.post(f"http://rebound.example:{peer_port}/in", b"{}", {})
    finally:
        await c.aclose()
        await checked.aclose()
    assert len(peer.requests) == 5
    assert "local.receiver." not in server.asked and "api.localhost." not in server.asked


def test_a_hosts_file_reads_as_names_and_their_addresses() -> None:
    text = "127.0.0.1 a b.\n# 10.0.0.1 c\n::1 A\nfe80::1%eth0 d\nnonsense e\n\n10.0.0.2\n"
    assert read_hosts(text) == {
        "a": [(socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")],
        "b": [(socket.AF_INET, "127.0.0.1")],
        "d": [(socket.AF_INET6, "fe80::1")],
    }
