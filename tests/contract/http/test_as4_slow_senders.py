"""A message to the AS4 endpoint is taken in before it waits for a turn at the inbound gate
(``as4_inbound_concurrency``), under bounds of time (``spooling.Pace``): senders that stall or
trickle hold none of the gate's turns, so every other access point's message is still
answered at once, and each of them is refused and cut off within the bounds, leaving no file
behind."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import time
from collections.abc import Mapping
from typing import Any

import pytest

from fourcorner.entrypoints.container import resolve
from fourcorner.entrypoints.http.spooling import CHUNK, Pace
from sbd_factory import make_sbd

from .conftest import Api
from .test_as4_endpoint import error_code, message, no_errors_logged, post, setup, spooled
from .test_participants import BOB, gln
from .test_transactions import until

GATE = 8  # the default as4_inbound_concurrency
# the stalled senders' addresses, other than the client's own (127.0.0.1): spread over them,
# each has fewer messages in flight than it may (as4_inbound_per_address, test_as4_per_address)
# and fewer large ones on disk than its share of the places (address_limit.spool_share)
SOURCES = tuple(f"127.0.0.{i}" for i in range(2, 10))


async def stalled(
    api: Api,
    path: str,
    sent: bytes = b"--b\r\n",
    *,
    content_type: str = 'multipart/related; boundary="b"',
    by: str | None = None,
    source: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Any:
    """A connection that sends a message's headers (a body of 1 MB declared; ``by``: with a
    bearer token of that user; ``headers``: with these too) and ``sent`` of its body, then
    nothing more: its reader and writer. ``source``: the client address it comes from (one of
    the loopback network)."""
    server = api.client.server
    local = (source, 0) if source is not None else None
    reader, writer = await asyncio.open_connection(server.host, server.port, local_addr=local)
    extra = f"Authorization: Bearer {api.token(by)}\r\n" if by else ""
    extra += "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
    writer.write(
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\n{extra}"
        "Content-Length: 1000000\r\n\r\n".encode()
        + sent
    )
    await writer.drain()
    return reader, writer


async def refusal(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, feed: bytes = b""
) -> tuple[int, dict[str, Any], float]:
    """The answer on a ``stalled`` connection, read within 5 seconds, the connection then
    closed, and how long it took to come; ``feed``: sent every 0.05 s meanwhile (a sender that
    trickles, or keeps sending)."""

    async def feeding() -> None:
        with contextlib.suppress(ConnectionError):
            while True:
                await asyncio.sleep(0.05)
                writer.write(feed)
                await writer.drain()

    fed = asyncio.create_task(feeding()) if feed else None
    started = time.monotonic()
    try:
        status, body = await asyncio.wait_for(answer_of(reader), timeout=5)
    finally:
        if fed is not None:
            fed.cancel()
        writer.close()
    return status, body, time.monotonic() - started


async def answer_of(reader: asyncio.StreamReader) -> tuple[int, dict[str, Any]]:
    """The status and JSON body of the answer on ``reader``, read to the connection's end."""
    raw = await reader.read()
    head, _, body = raw.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


@pytest.mark.parametrize("senders", [GATE, 3 * GATE])
async def test_stalled_senders_do_not_keep_a_message_from_its_receipt(api, senders, caplog):
    """As many stalled uploads as the gate has turns (and more) leave it free: a valid
    message from another access point gets its receipt at once, while they still hang."""
    _, receiver, path = await setup(api)
    counts = await resolve(api.container.as4_per_address)
    conns = [await stalled(api, path, source=SOURCES[i % len(SOURCES)]) for i in range(senders)]
    try:
        # every one is in its handler (counted for its address), waiting for its body
        in_flight = _async(lambda: sum(counts.in_flight(s) for s in SOURCES) == senders)
        await until(in_flight, within=5)
        sender = f"0088:{gln(85)}"
        msg = message(
            api, make_sbd(sender=sender, receiver=receiver), sender=sender, receiver=receiver
        )
        started = time.monotonic()
        status, answer = await asyncio.wait_for(post(api, path, msg), timeout=10)
        assert status == 200 and error_code(answer) is None and b"Receipt" in answer
        assert time.monotonic() - started < 5
        assert all(not reader.at_eof() for reader, _ in conns)  # they are still held
    finally:
        for _, writer in conns:
            writer.close()
    no_errors_logged(caplog)


async def test_a_stalled_sender_is_refused_and_cut_off_within_the_idle_bound(paced, caplog):
    """A sender that stops sending its body gets 400 AT-1000 after ``idle`` seconds, its
    connection closed, and its part of the body (in memory, or spooled to a file once it is
    large) is dropped."""
    api = await paced(Pace(idle=0.5, total=60.0))
    _, _, path = await setup(api)
    docs = await resolve(api.container.documents)
    for sent in (b"--b\r\n", b"\0" * (CHUNK + 1024)):  # held in memory; spooled to a file
        status, body, took = await refusal(*await stalled(api, path, sent))
        assert status == 400 and body["code"] == "AT-1000", body
        assert "no byte of the body came for 0.5 seconds" in body["error"]
        assert 0.4 < took < 0.5 + 0.2 + 1.0  # idle, then the lingering close's patience
        assert spooled(docs) == []
    no_errors_logged(caplog)


async def test_a_trickling_sender_is_refused_and_cut_off_within_the_total_bound(paced, caplog):
    """A sender that sends a byte at a time, often enough never to be idle, is cut off once
    its body has taken ``total`` seconds and one more for each ``rate`` bytes it sent."""
    api = await paced(Pace(idle=5.0, total=0.5, rate=1000))
    _, _, path = await setup(api)
    status, body, took = await refusal(*await stalled(api, path), feed=b"x")
    assert status == 400 and body["code"] == "AT-1000", body
    assert "slower than 1000 bytes a second" in body["error"]
    assert 0.4 < took < 0.5 + 0.1 + 1.0 + 1.0  # total, its bytes' share, lingering
    no_errors_logged(caplog)


async def test_a_message_sent_in_pieces_within_the_bounds_gets_its_receipt(paced):
    """A sender that pauses between pieces, each time for less than ``idle``, and sends
    faster than ``rate`` overall, is taken in whole."""
    api = await paced(Pace(idle=0.5, total=0.5, rate=1000))
    _, receiver, path = await setup(api)
    sender = f"0088:{gln(86)}"
    msg = message(api, make_sbd(sender=sender, receiver=receiver), sender=sender, receiver=receiver)
    pieces = [msg.body[i : i + 4096] for i in range(0, len(msg.body), 4096)]

    async def slowly() -> Any:
        for piece in pieces:
            yield piece
            await asyncio.sleep(0.2)

    resp = await api.client.post(path, data=slowly(), headers=msg.http_headers)
    answer = await resp.read()
    assert resp.status == 200 and error_code(answer) is None and b"Receipt" in answer


async def test_no_more_large_messages_are_on_disk_at_once_than_the_spools(api, caplog):
    """Taken in before the gate, large messages are bounded by spools of their own (twice the
    gate's turns): as many senders more as that, each having sent more than ``CHUNK`` bytes
    of a large body, wait unread and make no file; a small message still gets its receipt."""
    _, receiver, path = await setup(api)
    docs = await resolve(api.container.documents)
    large = b"\0" * (CHUNK + 1024)
    conns = [
        await stalled(api, path, large, source=SOURCES[i % len(SOURCES)]) for i in range(3 * GATE)
    ]
    try:
        await until(_async(lambda: len(spooled(docs)) >= 2 * GATE), within=5)
        await asyncio.sleep(0.3)  # time for any more to start a file
        assert len(spooled(docs)) == 2 * GATE
        sender = f"0088:{gln(87)}"
        msg = message(
            api, make_sbd(sender=sender, receiver=receiver), sender=sender, receiver=receiver
        )
        status, answer = await asyncio.wait_for(post(api, path, msg), timeout=10)
        assert status == 200 and error_code(answer) is None and b"Receipt" in answer
    finally:
        for _, writer in conns:
            writer.close()
    await until(_async(lambda: not spooled(docs)), within=5)
    no_errors_logged(caplog)


def _async(check: Any) -> Any:
    async def predicate() -> Any:
        return check()

    return predicate


@pytest.mark.parametrize("route", ["transactions", "validation"])
async def test_a_stalled_document_upload_is_refused_within_the_idle_bound(paced, route, caplog):
    """The REST intakes of documents (sending one, checking one) take their bodies under the
    same bounds of time: an upload that stops gets 400 AT-1000 and its connection closed."""
    api = await paced(Pace(idle=0.5, total=60.0))
    b, _, _ = await setup(api)
    _, aps = await api.call("GET", f"/orgs/{b['id']}/aps/alltouse", as_=BOB)
    path = (
        f"/orgs/{b['id']}/transactions?ap={aps['items'][0]['id']}"
        if route == "transactions"
        else "/validation"
    )
    status, body, took = await refusal(
        *await stalled(
            api, path, b"<sh:StandardBusinessDocument", content_type="application/xml", by=BOB
        )
    )
    assert status == 400 and body["code"] == "AT-1000", body
    assert "no byte of the body came for 0.5 seconds" in body["error"]
    assert took < 0.5 + 0.2 + 1.0
    no_errors_logged(caplog)


async def test_a_compressed_message_waits_for_a_spool_however_small_it_is_announced(api):
    """aiohttp inflates a ``Content-Encoding: gzip`` body as it is read, past what its length
    announced: such a message counts as large, so with every spool taken it waits unread (no
    file is made) until one comes free, then is taken in and answered."""
    _, _, path = await setup(api)
    docs = await resolve(api.container.documents)
    spools = await resolve(api.container.as4_spools)
    taken = 0
    while not spools.locked():
        await spools.acquire()
        taken += 1
    body = gzip.compress(b"--b\r\n" + b"\0" * (50 * CHUNK))
    assert len(body) < CHUNK
    headers = {"Content-Type": 'multipart/related; boundary="b"', "Content-Encoding": "gzip"}
    posting = asyncio.ensure_future(api.client.post(path, data=body, headers=headers))
    try:
        done, _ = await asyncio.wait({posting}, timeout=1.0)
        assert not done and spooled(docs) == []  # waiting, unread
    finally:
        for _ in range(taken):
            spools.release()
    resp = await asyncio.wait_for(posting, timeout=10)
    assert resp.status in (200, 400, 413), await resp.read()  # answered once a spool was free
    await until(_async(lambda: not spooled(docs)), within=5)


async def test_a_multipart_upload_stalled_before_its_file_part_is_refused(paced, caplog):
    """The parts before the ``file`` part of a multipart upload are read under the bounds too:
    a sender that stalls in one is refused 400 AT-1000 once ``idle`` and ``total`` are over."""
    api = await paced(Pace(idle=0.5, total=0.5))
    await setup(api)
    status, body, took = await refusal(
        *await stalled(
            api,
            "/validation",
            b'--b\r\nContent-Disposition: form-data; name="x"\r\n\r\nabc',
            content_type='multipart/form-data; boundary="b"',
            by=BOB,
        )
    )
    assert status == 400 and body["code"] == "AT-1000", body
    assert "file part did not begin within 1 seconds" in body["error"]
    assert took < 1.0 + 0.2 + 1.0
    no_errors_logged(caplog)


async def test_a_body_is_cut_off_after_the_longest_time_however_fast_it_comes(paced, caplog):
    """A sender faster than ``rate`` all along is still cut off after ``longest`` seconds."""
    api = await paced(Pace(idle=5.0, total=0.2, rate=1, longest=0.6))
    _, _, path = await setup(api)
    status, body, took = await refusal(*await stalled(api, path), feed=b"x" * 64)
    assert status == 400 and body["code"] == "AT-1000", body
    assert "the body took more than 0.6 seconds" in body["error"]
    assert 0.5 < took < 0.6 + 1.0 + 0.5
    no_errors_logged(caplog)
