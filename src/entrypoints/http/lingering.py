"""The lingering close of a connection whose request body is left unread.

An answer given before the request's body has arrived whole (a refusal before or while reading
it: no such access point, a body over its limit, no credentials) ends the connection, and the
rest of the body is not taken in. Closing a socket with bytes still arriving makes the network
stack answer them with a reset, which may reach the client before it has read the answer and
throw the answer away there. So, as nginx's and Apache's lingering close do, the answer is sent
first, then the sending side is shut (the client reads the answer, then the end of the stream),
and what the client goes on sending is read and dropped, one buffer at a time, until it stops or
a bound of ``Linger`` is reached; then the connection is closed. A client cannot hold the
connection longer than ``Linger.total`` seconds, nor make the service read more than
``Linger.max_bytes`` bytes, and the bytes read are dropped as they come: aiohttp stops reading
the socket while more than twice its read buffer waits (128 KiB; 2 MiB once a JSON body was
read, 512 KiB once a document was streamed).
"""

from __future__ import annotations

import asyncio
import contextlib

import attrs
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError


@attrs.frozen
class Linger:
    """How long, and how much, a closing connection goes on reading what the client sends."""

    total: float = 10.0
    """Seconds from the answer's end to the close, at most (nginx's ``lingering_time`` is 30,
    aiohttp's own lingering read of an unread body 10)."""
    idle: float = 2.0
    """Seconds without a byte from the client, after which the connection is closed (Apache
    waits 2 seconds a read, nginx's ``lingering_timeout`` is 5)."""
    max_bytes: int = 32 * 1024 * 1024
    """Bytes read and dropped, at most: a sender that is still sending then is cut off."""


BOUNDS = Linger()
"""The service's bounds."""

LINGER = web.AppKey("linger", Linger)
"""The app's bounds of a lingering close (``build_app`` sets them)."""


def body_unread(request: web.Request) -> bool:
    """The request's body has not arrived whole: more of it may be on its way."""
    return not request.content.is_eof()


async def answer_and_close(request: web.Request, response: web.StreamResponse) -> None:
    """Send ``response`` now with ``Connection: close``, then shut the sending side of the
    connection: the client reads the answer and the end of the stream."""
    response.force_close()
    try:
        await response.prepare(request)
        await response.write_eof()
    except ConnectionError:
        return  # the peer is gone already
    transport = request.transport
    if transport is not None and not transport.is_closing() and transport.can_write_eof():
        with contextlib.suppress(OSError):  # the peer is gone already
            transport.write_eof()  # shutdown(SHUT_WR) once what the transport holds is sent


async def linger(request: web.Request, bounds: Linger) -> None:
    """Read and drop what the client still sends, within ``bounds``; then close the
    connection."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + bounds.total
    left = bounds.max_bytes
    content = request.content
    try:
        while left > 0 and not content.at_eof():
            async with asyncio.timeout_at(min(deadline, loop.time() + bounds.idle)):
                chunk = await content.readany()
            if not chunk:
                break
            left -= len(chunk)
    except TimeoutError:
        pass  # the client was slow to send or to stop
    except (ConnectionError, HttpProcessingError, web.RequestPayloadError):
        pass  # the client is gone, or broke the body's framing
    finally:
        request.protocol.force_close()
