"""Reading a peer's answer (an aiohttp client response) with a cap, so that an endless or huge
body costs at most the cap in memory. Shared by the adapters that talk to the outside (AS4,
the SMP lookup, webhooks, the OIDC keys); none of them imports another for it.

Leaving the rest of a body unread is safe: closing the response then closes its connection
instead of returning it to the pool. aiohttp bounds what it decompresses per read as well.
"""

from __future__ import annotations

import aiohttp

_CHUNK = 64 * 1024


class AnswerTooLarge(Exception):
    """The answer has more than ``limit`` bytes; the adapter turns it into its own failure."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the answer is larger than {limit} bytes")
        self.limit = limit


async def read_capped(response: aiohttp.ClientResponse, limit: int) -> bytes:
    """The whole body of ``response``; ``AnswerTooLarge`` once it has more than ``limit``
    bytes (at most ``limit + 1`` are read; a declared larger length is refused unread)."""
    declared = response.content_length
    if declared is not None and declared > limit:
        raise AnswerTooLarge(limit)
    body = await read_head(response, limit + 1)
    if len(body) > limit:
        raise AnswerTooLarge(limit)
    return body


async def read_head(response: aiohttp.ClientResponse, limit: int) -> bytes:
    """The first ``limit`` bytes of the body of ``response`` (all of it when shorter); the rest
    is not read."""
    body = bytearray()
    while len(body) < limit:
        chunk = await response.content.read(min(_CHUNK, limit - len(body)))
        if not chunk:
            break
        body += chunk
    return bytes(body)
