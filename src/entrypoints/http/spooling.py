"""Taking a request body in: an SBD or billing document (raw XML, or the ``file`` part of a
multipart form), or an AS4 message, under a size limit and without holding a large one in
memory: a body of less than ``CHUNK`` bytes is kept as bytes, a larger one streamed to a
file; and, when a ``Pace`` is given, within bounds of time, so that a sender that stalls or
trickles is cut off rather than holding what it was given."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, BinaryIO

import attrs
from aiohttp import BodyPartReader, StreamReader, web
from aiohttp.http_exceptions import HttpProcessingError

from fourcorner.domain.errors import InvalidInput, MalformedBody
from fourcorner.entrypoints.http.errors import BodyTooLarge, UnsupportedMediaType

XML_TYPES = ("application/xml", "text/xml")
# what ``spool`` reads: the XML itself, or a form with the XML as its part ``file``
DOCUMENT_TYPES = (*XML_TYPES, "multipart/form-data")
CHUNK = 256 * 1024


@attrs.frozen
class Pace:
    """How slowly a request body may arrive (as Apache's ``RequestReadTimeout body=20,
    MinRate=500`` and nginx's ``client_body_timeout`` bound it): a sender that sends nothing
    for ``idle`` seconds, or whose body has taken more than ``total`` seconds and one more
    for each ``rate`` bytes it has sent, or ``longest`` seconds in all, is cut off
    (``MalformedBody``); a multipart body's ``file`` part must begin within ``idle`` and
    ``total`` seconds."""

    idle: float = 20.0
    """Seconds without a byte from the sender."""
    total: float = 20.0
    """Seconds for a body, before what it has sent extends them (``rate``)."""
    rate: int = 16 * 1024
    """Bytes a second: each ``rate`` bytes received give the sender one more second, so a
    sender at least this fast is never cut off by ``total``."""
    longest: float = 600.0
    """Seconds for a body at most, however fast it comes (a body at the AS4 limit of about
    201 MiB needs 343 KiB a second)."""


PACE_BOUNDS = Pace()
"""The service's bounds."""

PACE = web.AppKey("pace", Pace)
"""The app's bounds of a body's arrival (``build_app`` sets them)."""


async def spool(
    request: web.Request,
    incoming: Callable[[], Path],
    limit: int,
    digest: Any = None,
    expected: str = "an SBD file",
) -> bytes | Path:
    """The SBD of ``request`` (raw XML, or the ``file`` part of a multipart form), refusing
    more than ``limit`` bytes without holding the body in memory (``body``), within the app's
    bounds of time (``PACE``): its bytes, or
    the file ``incoming()`` made for a large one, to be removed by the caller. ``digest`` (a
    ``hashlib`` hash) is fed the SBD's bytes on the way. ``expected`` names what the body
    should be, for the refusal of an empty one."""
    if request.content_length is not None and request.content_length > limit:
        raise BodyTooLarge(limit=limit)
    ctype = request.content_type
    if ctype in XML_TYPES:
        stream: StreamReader | BodyPartReader = request.content
    elif ctype == "multipart/form-data":
        stream = await _file_part(request, request.config_dict.get(PACE))
    else:
        raise UnsupportedMediaType.of(request, "application/xml or multipart/form-data")
    taken = await body(stream, incoming, limit, digest, pace=request.config_dict.get(PACE))
    if isinstance(taken, bytes) and not taken:
        raise MalformedBody(reason=f"the body is empty; {expected} is expected")
    return taken


async def body(
    stream: StreamReader | BodyPartReader,
    incoming: Callable[[], Path],
    limit: int,
    digest: Any = None,
    pace: Pace | None = None,
) -> bytes | Path:
    """``stream`` whole, refusing more than ``limit`` bytes: its bytes when it ends within
    ``CHUNK`` bytes (a document of the usual size: no file made, written, read back and
    removed), else the file ``incoming()`` makes (the caller removes it; it is removed here
    when the body is refused). A sender that hangs up midway, or (with ``pace``) is too
    slow, is bad input, not an error of ours. ``digest``: a ``hashlib`` hash that each chunk
    updates. A large body is written about ``CHUNK`` bytes at a time, each in one thread hop,
    the file made by the first."""
    pieces = _pieces(stream, limit, digest, pace)
    data, ended = await anext(pieces)
    if ended:
        return data
    target = incoming()
    try:
        # made in a thread: creating a file waits for its folder, which another thread's
        # fsync may hold for milliseconds (seen as the event loop's longest block under load)
        out = await asyncio.to_thread(_create, target, data)
        try:
            async for data, _ in pieces:
                if data:
                    await asyncio.to_thread(out.write, data)
        finally:
            out.close()
    except BaseException:
        target.unlink(missing_ok=True)
        raise
    return target


async def _pieces(
    stream: StreamReader | BodyPartReader, limit: int, digest: Any, pace: Pace | None
) -> AsyncIterator[tuple[bytes, bool]]:
    """``stream`` in pieces of at least ``CHUNK`` bytes but the last (which may be empty),
    each with whether it is the last; more than ``limit`` bytes in all is ``BodyTooLarge``,
    a sender that hangs up midway, or misses a bound of ``pace``, ``MalformedBody``.
    ``digest`` is fed each chunk."""
    size = 0
    held: list[bytes] = []  # read, not yet given: less than CHUNK bytes
    held_size = 0
    loop = asyncio.get_running_loop()
    started = loop.time()
    while True:
        read = (
            stream.read_chunk(CHUNK) if isinstance(stream, BodyPartReader) else stream.read(CHUNK)
        )
        try:
            if pace is None:
                chunk = await read
            else:
                idle_ends = loop.time() + pace.idle
                allowed = pace.total + size / pace.rate
                total_ends = started + min(allowed, pace.longest)
                async with asyncio.timeout_at(min(idle_ends, total_ends)):
                    chunk = await read
        except ConnectionError:
            raise MalformedBody(reason="the connection was lost before the body ended") from None
        except TimeoutError:
            assert pace is not None
            raise MalformedBody(
                reason=f"no byte of the body came for {pace.idle:g} seconds"
                if idle_ends <= total_ends
                else f"the body took more than {pace.longest:g} seconds"
                if allowed >= pace.longest
                else f"the body came slower than {pace.rate} bytes a second"
            ) from None
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(limit=limit)
        if digest is not None:
            digest.update(chunk)
        held.append(chunk)
        held_size += len(chunk)
        if chunk and held_size < CHUNK:
            continue
        data = held[0] if len(held) == 1 else b"".join(held)
        held.clear()
        held_size = 0
        yield data, not chunk
        if not chunk:
            return


def _create(target: Path, data: bytes) -> BinaryIO:
    """The file ``target``, made (emptied if it is there) and open, with ``data`` written."""
    out = target.open("wb")
    try:
        out.write(data)
    except BaseException:
        out.close()
        raise
    return out


async def _file_part(request: web.Request, pace: Pace | None) -> BodyPartReader:
    """The part named ``file``, which must begin within ``pace``'s ``idle`` and ``total``
    seconds (the parts before it are read and dropped meanwhile)."""
    within = None if pace is None else pace.idle + pace.total
    try:
        async with asyncio.timeout(within):
            reader = await request.multipart()
            while True:
                part = await reader.next()
                if part is None:
                    break
                if isinstance(part, BodyPartReader) and part.name == "file":
                    return part
    except TimeoutError:
        raise MalformedBody(
            reason=f"the multipart body's file part did not begin within {within:g} seconds"
        ) from None
    except ConnectionError:
        raise MalformedBody(reason="the connection was lost before the body ended") from None
    except (ValueError, AssertionError, HttpProcessingError) as e:
        # HttpProcessingError: a part's header aiohttp cannot read (a control character)
        raise MalformedBody(reason=f"the multipart body is malformed ({e})") from None
    raise InvalidInput.one("file", "a multipart body needs a part named file")
