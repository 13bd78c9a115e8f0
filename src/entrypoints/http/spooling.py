"""Streaming a request body to a file: an SBD or billing document (raw XML, or the ``file``
part of a multipart form), or an AS4 message, under a size limit and without holding it in
memory."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, BinaryIO

from aiohttp import BodyPartReader, StreamReader, web
from aiohttp.http_exceptions import HttpProcessingError

from fourcorner.domain.errors import InvalidInput, MalformedBody
from fourcorner.entrypoints.http.errors import BodyTooLarge, UnsupportedMediaType

XML_TYPES = ("application/xml", "text/xml")
# what ``spool`` reads: the XML itself, or a form with the XML as its part ``file``
DOCUMENT_TYPES = (*XML_TYPES, "multipart/form-data")
CHUNK = 256 * 1024


async def spool(
    request: web.Request,
    target: Path,
    limit: int,
    digest: Any = None,
    expected: str = "an SBD file",
) -> None:
    """Stream the SBD of ``request`` (raw XML, or the ``file`` part of a multipart form) to
    ``target``, refusing more than ``limit`` bytes without holding the body in memory;
    ``digest`` (a ``hashlib`` hash) is fed the SBD's bytes on the way. ``expected`` names what
    the body should be, for the refusal of an empty one."""
    if request.content_length is not None and request.content_length > limit:
        raise BodyTooLarge(limit=limit)
    ctype = request.content_type
    if ctype in XML_TYPES:
        stream: StreamReader | BodyPartReader = request.content
    elif ctype == "multipart/form-data":
        stream = await _file_part(request)
    else:
        raise UnsupportedMediaType(got=ctype, expected="application/xml or multipart/form-data")
    if await copy(stream, target, limit, digest) == 0:
        raise MalformedBody(reason=f"the body is empty; {expected} is expected")


async def copy(
    stream: StreamReader | BodyPartReader, target: Path, limit: int, digest: Any = None
) -> int:
    """Stream ``stream`` to the file ``target`` a chunk at a time, refusing more than ``limit``
    bytes; returns the size. A sender that hangs up midway is bad input, not an error of ours.
    ``digest``: a ``hashlib`` hash that each chunk updates. What arrives is written about
    ``CHUNK`` bytes at a time, each in one thread hop; the file is made by the first of them
    (a body of at most ``CHUNK`` bytes, the usual document: one hop in all)."""
    size = 0
    held: list[bytes] = []  # read, not yet written: less than CHUNK bytes
    held_size = 0
    out: BinaryIO | None = None
    try:
        while True:
            try:
                chunk = await (
                    stream.read_chunk(CHUNK)
                    if isinstance(stream, BodyPartReader)
                    else stream.read(CHUNK)
                )
            except ConnectionError:
                raise MalformedBody(
                    reason="the connection was lost before the body ended"
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
            data = b"".join(held)
            held.clear()
            held_size = 0
            if out is None:
                # made in a thread: creating a file waits for its folder, which another
                # thread's fsync may hold for milliseconds (seen as the event loop's longest
                # block under load)
                out = await asyncio.to_thread(_create, target, data)
            elif data:
                await asyncio.to_thread(out.write, data)
            if not chunk:
                return size
    finally:
        if out is not None:
            out.close()


def _create(target: Path, data: bytes) -> BinaryIO:
    """The file ``target``, made (emptied if it is there) and open, with ``data`` written."""
    out = target.open("wb")
    try:
        out.write(data)
    except BaseException:
        out.close()
        raise
    return out


async def _file_part(request: web.Request) -> BodyPartReader:
    try:
        reader = await request.multipart()
        while True:
            part = await reader.next()
            if part is None:
                break
            if isinstance(part, BodyPartReader) and part.name == "file":
                return part
    except (ValueError, AssertionError, HttpProcessingError) as e:
        # HttpProcessingError: a part's header aiohttp cannot read (a control character)
        raise MalformedBody(reason=f"the multipart body is malformed ({e})") from None
    raise InvalidInput.one("file", "a multipart body needs a part named file")
