"""The directory's indexer: ``PUT <indexer>/`` with the participant identifier as text.

The directory then fetches the business card from the participant's SMP. A real directory
authenticates the SMP by its TLS client certificate: pass ``ssl`` built with that certificate.
"""

from __future__ import annotations

import ssl as ssl_module

import aiohttp

from fourcorner.domain.errors import ServiceUnavailable
from fourcorner.domain.smp import PARTICIPANT_SCHEME


class IndexerDirectoryPublisher:
    def __init__(
        self, indexer_url: str, *, ssl: ssl_module.SSLContext | None = None, timeout: float = 10.0
    ) -> None:
        self._url = indexer_url.rstrip("/") + "/"
        self._ssl = ssl
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._session: aiohttp.ClientSession | None = None

    async def publish(self, participant: str) -> None:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        body = f"{PARTICIPANT_SCHEME}::{participant.lower()}"
        try:
            async with self._session.put(
                self._url, data=body.encode(), headers={"Content-Type": "text/plain"}, ssl=self._ssl
            ) as resp:
                if resp.status >= 300:
                    raise ServiceUnavailable(reason=f"the directory answered {resp.status}")
        except (aiohttp.ClientError, TimeoutError) as e:
            raise ServiceUnavailable(reason=f"the directory cannot be reached ({e})") from None

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
