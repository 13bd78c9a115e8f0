"""One client address has at most ``as4_inbound_per_address`` inbound AS4 messages in flight:
one more is refused at once, its body unread (503 AT-1504 with ``Retry-After``), while other
addresses are served; a message gives its count back however it ends, and 0 is no limit."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from fourcorner.entrypoints.config import Settings
from fourcorner.entrypoints.container import resolve
from fourcorner.entrypoints.http.address_limit import RETRY_AFTER, AddressLimit, spool_share
from fourcorner.entrypoints.http.spooling import CHUNK, Pace
from sbd_factory import make_sbd

from .conftest import Api
from .test_as4_endpoint import error_code, message, no_errors_logged, setup, spooled
from .test_as4_slow_senders import SOURCES, refusal, stalled
from .test_participants import gln
from .test_transactions import until

LIMIT = 3
SLOW = SOURCES[0]  # an address of the loopback network other than the client's own, 127.0.0.1


async def held_by(api: Api) -> AddressLimit:
    limit: AddressLimit = await resolve(api.container.as4_per_address)
    return limit


def _state(check: Any) -> Any:
    async def predicate() -> Any:
        return check()

    return predicate


@contextlib.asynccontextmanager
async def client_from(source: str) -> AsyncIterator[aiohttp.ClientSession]:
    """A client whose connections come from ``source``."""
    async with aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(local_addr=(source, 0))
    ) as session:
        yield session


async def post_from(
    api: Api, source: str, path: str, receiver: str, n: int = 1
) -> list[tuple[int, bytes]]:
    """``n`` valid messages to ``receiver`` posted at once from ``source`` to ``path``: the
    status and body of each answer."""
    sender = f"0088:{gln(88)}"
    msgs = [
        message(api, make_sbd(sender=sender, receiver=receiver), sender=sender, receiver=receiver)
        for _ in range(n)
    ]
    url = api.client.make_url(path)
    async with client_from(source) as session:

        async def one(msg: Any) -> tuple[int, bytes]:
            async with session.post(url, data=msg.body, headers=msg.http_headers) as resp:
                return resp.status, await resp.read()

        return list(await asyncio.gather(*(one(m) for m in msgs)))


async def answer_at_once(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> tuple[int, dict[str, str], dict[str, Any]]:
    """The answer on a ``stalled`` connection, read to its end within 5 seconds (a quarter of
    the bounds' 20 seconds without a byte: an answer that waited for the body would not come
    so soon): its status, headers (names in lower case) and JSON body."""
    try:
        raw = await asyncio.wait_for(reader.read(), timeout=5)
    finally:
        writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *lines = head.decode().split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (h.partition(":") for h in lines)}
    return int(status_line.split()[1]), headers, json.loads(body)


async def test_one_more_message_from_an_address_at_its_limit_is_refused_at_once(paced, caplog):
    """With ``LIMIT`` slow messages of one address in flight (each sent its head and 5 bytes of
    the 1 MB it announced), its next one is answered at once, unread: 503 AT-1504, with
    ``Retry-After`` and the connection closed; a message from another address gets its
    receipt meanwhile, and the slow ones are still held."""
    api = await paced(Pace(), as4_inbound_per_address=LIMIT)
    _, receiver, path = await setup(api)
    limit = await held_by(api)
    conns = [await stalled(api, path, source=SLOW) for _ in range(LIMIT)]
    try:
        await until(_state(lambda: limit.in_flight(SLOW) == LIMIT), within=5)
        started = time.monotonic()
        status, headers, body = await answer_at_once(*await stalled(api, path, source=SLOW))
        assert status == 503 and body["code"] == "AT-1504", body
        assert f"{LIMIT} messages in flight" in body["error"]
        assert headers["retry-after"] == str(RETRY_AFTER)
        assert headers["connection"] == "close"
        assert time.monotonic() - started < 5
        [(status, answer)] = await post_from(api, "127.0.0.1", path, receiver)
        assert status == 200 and error_code(answer) is None and b"Receipt" in answer
        assert limit.in_flight(SLOW) == LIMIT  # its slow ones are still in flight
    finally:
        for _, writer in conns:
            writer.close()
    await until(_state(lambda: len(limit) == 0), within=5)
    no_errors_logged(caplog)


async def _answered(api: Api, path: str, receiver: str) -> None:
    answers = await post_from(api, SLOW, path, receiver, LIMIT)
    assert all(s == 200 and error_code(a) is None for s, a in answers), answers


async def _refused(api: Api, path: str, receiver: str) -> None:
    """Messages to no access point: 404, refused inside the count as any other refusal."""
    url = api.client.make_url(path.rsplit("/", 1)[0] + f"/{uuid.uuid4()}")
    async with client_from(SLOW) as session:

        async def one() -> int:
            async with session.post(url, data=b"--b\r\n") as resp:
                return resp.status

        assert await asyncio.gather(*(one() for _ in range(LIMIT))) == [404] * LIMIT


async def _cut_off(api: Api, path: str, receiver: str) -> None:
    """Stalled messages, each refused once no byte came for the bounds' 0.5 seconds."""
    conns = [await stalled(api, path, source=SLOW) for _ in range(LIMIT)]
    answers = await asyncio.gather(*(refusal(*conn) for conn in conns))
    assert [(status, body["code"]) for status, body, _ in answers] == [(400, "AT-1000")] * LIMIT


async def _gone(api: Api, path: str, receiver: str) -> None:
    """Stalled messages whose senders hang up, once every one is in flight."""
    limit = await held_by(api)
    conns = [await stalled(api, path, source=SLOW) for _ in range(LIMIT)]
    await until(_state(lambda: limit.in_flight(SLOW) == LIMIT), within=5)
    for _, writer in conns:
        writer.close()


ENDINGS = {"answered": _answered, "refused": _refused, "cut off": _cut_off, "gone": _gone}


@pytest.mark.parametrize("ending", ENDINGS)
async def test_an_address_has_its_count_back_however_its_messages_end(paced, ending, caplog):
    """Round after round, an address's ``LIMIT`` messages in flight end (with a receipt, a
    refusal, cut off by the bounds of time, or the sender gone): their counts are given back,
    the address's entry goes, and its next message is taken in as the first was."""
    idle = 0.5 if ending == "cut off" else 60.0  # else the bounds end no message here
    api = await paced(Pace(idle=idle, total=60.0), as4_inbound_per_address=LIMIT)
    _, receiver, path = await setup(api)
    limit = await held_by(api)
    for _ in range(3):
        await ENDINGS[ending](api, path, receiver)
        await until(_state(lambda: len(limit) == 0), within=5)
    [(status, answer)] = await post_from(api, SLOW, path, receiver)
    assert status == 200 and error_code(answer) is None and b"Receipt" in answer
    assert len(limit) == 0
    no_errors_logged(caplog)


async def test_zero_counts_nothing_and_refuses_nothing(paced, caplog):
    """With 0, one address holds more messages in flight than the default limit (each spooled
    to a file: as many files as messages show all are in), and its next one is served."""
    over = Settings().as4_inbound_per_address + 1
    api = await paced(Pace(), as4_inbound_per_address=0, as4_inbound_concurrency=over)
    _, receiver, path = await setup(api)
    docs = await resolve(api.container.documents)
    limit = await held_by(api)
    large = b"\0" * (CHUNK + 1024)
    conns = [await stalled(api, path, large, source=SLOW) for _ in range(over)]
    try:
        await until(_state(lambda: len(spooled(docs)) == over), within=5)
        [(status, answer)] = await post_from(api, SLOW, path, receiver)
        assert status == 200 and error_code(answer) is None and b"Receipt" in answer
        assert len(limit) == 0
    finally:
        for _, writer in conns:
            writer.close()
    await until(_state(lambda: not spooled(docs)), within=5)
    no_errors_logged(caplog)


async def test_one_address_holds_no_more_than_its_share_of_the_places_on_disk(paced, caplog):
    """At the defaults one address may have 16 messages in flight, as many as there are places
    on disk; of those it holds at most a quarter (``spool_share``): its next large message is
    refused at once, unread (503 AT-1504 saying so), while another address's large message
    still finds a place and its receipt, and a small one of the same address is still read."""
    api = await paced(Pace())
    settings = Settings()
    share = spool_share(2 * settings.as4_inbound_concurrency, settings.as4_inbound_per_address)
    assert 0 < share < settings.as4_inbound_per_address
    _, receiver, path = await setup(api)
    docs = await resolve(api.container.documents)
    large = b"\0" * (CHUNK + 1024)
    conns = [await stalled(api, path, large, source=SLOW) for _ in range(share)]
    try:
        await until(_state(lambda: len(spooled(docs)) == share), within=5)
        status, headers, body = await answer_at_once(*await stalled(api, path, source=SLOW))
        assert status == 503 and body["code"] == "AT-1504", body
        assert f"{share} large messages on disk" in body["error"]
        assert headers["retry-after"] == str(RETRY_AFTER)
        assert len(spooled(docs)) == share  # it made no file
        [(status, answer)] = await post_from(api, SLOW, path, receiver)  # a small one
        assert status == 200 and error_code(answer) is None and b"Receipt" in answer
        sender = f"0088:{gln(89)}"
        sbd = make_sbd(sender=sender, receiver=receiver)
        msg = message(api, sbd, sender=sender, receiver=receiver)

        async def chunked() -> AsyncIterator[bytes]:  # of no announced length: a large one
            yield msg.body

        async with client_from("127.0.0.1") as session:
            url = api.client.make_url(path)
            async with session.post(url, data=chunked(), headers=msg.http_headers) as resp:
                answer = await resp.read()
                assert resp.status == 200 and error_code(answer) is None, answer
                assert b"Receipt" in answer
    finally:
        for _, writer in conns:
            writer.close()
    await until(_state(lambda: not spooled(docs)), within=5)
    no_errors_logged(caplog)
