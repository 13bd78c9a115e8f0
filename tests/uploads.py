"""A raw HTTP upload of a big body, streamed from one small buffer, that reads the answer
while it sends (as a client does that must see an early refusal)."""

from __future__ import annotations

import asyncio
import contextlib

MiB = 1024 * 1024
CHUNK = b"\0" * (256 * 1024)


async def upload(
    port: int,
    path: str,
    size: int,
    *,
    headers: str = "",
    content_type: str = "application/json",
    chunked: bool = False,
    pause: float = 0.0,
) -> tuple[int | None, int, bool]:
    """POST ``size`` bytes of zeros to ``path``, from one small buffer, reading the answer
    while sending: ``(the status, or None when the connection was reset first, bytes sent,
    whether the whole body was sent)``. ``headers``: more header lines, each ending in CRLF;
    ``pause``: the client sends its first 1 MiB, then neither sends nor reads for that many
    seconds (a client busy elsewhere)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {size}"
    writer.write(
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: {content_type}\r\n"
        f"{headers}{framing}\r\n\r\n".encode()
    )
    sent = 0
    if pause:
        writer.write(CHUNK * 4)
        sent = len(CHUNK) * 4
        await writer.drain()
        await asyncio.sleep(pause)

    async def send() -> bool:
        nonlocal sent
        with contextlib.suppress(ConnectionError):
            while sent < size:
                piece = CHUNK[: size - sent]
                writer.write(b"%x\r\n%b\r\n" % (len(piece), piece) if chunked else piece)
                await writer.drain()
                sent += len(piece)
            if chunked:
                writer.write(b"0\r\n\r\n")
                await writer.drain()
            return True
        return False

    sending = asyncio.create_task(send())
    status: int | None = None
    try:
        line = await reader.readline()
        status = int(line.split()[1]) if line.startswith(b"HTTP/1.1 ") else None
        while await reader.read(65536):
            pass
    except ConnectionError:
        pass
    whole = await asyncio.wait_for(sending, 60)
    writer.close()
    return status, sent, whole
