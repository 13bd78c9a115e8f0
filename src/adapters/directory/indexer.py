"""The directory's indexer: ``PUT <indexer>/`` with the participant identifier as text to
have its business card indexed, ``DELETE <indexer>/<identifier>`` to have it removed.

The directory fetches the business card from the participant's SMP. Each environment has its
own directory (TEST: ``test-directory.peppol.eu``), as it has its own SML and SMP:
``EnvironmentDirectories`` sends each participant to the indexer of its environment. A real
directory authenticates the SMP by its TLS client certificate: pass ``ssl`` built with that
certificate.
"""

from __future__ import annotations

import ssl as ssl_module
from collections.abc import Mapping
from urllib.parse import quote

import aiohttp

from fourcorner.domain.errors import ServiceUnavailable
from fourcorner.domain.network_services import Environment
from fourcorner.domain.smp import PARTICIPANT_SCHEME


class IndexerDirectoryPublisher:
    """One directory's indexer, at ``indexer_url``."""

    def __init__(
        self, indexer_url: str, *, ssl: ssl_module.SSLContext | None = None, timeout: float = 10.0
    ) -> None:
        self._url = indexer_url.rstrip("/") + "/"
        self._ssl: ssl_module.SSLContext | bool = ssl if ssl is not None else True
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._session: aiohttp.ClientSession | None = None

    @property
    def url(self) -> str:
        return self._url

    async def publish(self, participant: str) -> None:
        body = f"{PARTICIPANT_SCHEME}::{participant.lower()}"
        await self._call("PUT", self._url, body.encode(), ok=())

    async def withdraw(self, participant: str) -> None:
        """Remove the participant's card; one the directory does not have (404) is gone."""
        target = quote(f"{PARTICIPANT_SCHEME}::{participant.lower()}", safe="")
        await self._call("DELETE", self._url + target, None, ok=(404,))

    async def _call(self, method: str, url: str, body: bytes | None, ok: tuple[int, ...]) -> None:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        headers = {"Content-Type": "text/plain"} if body is not None else {}
        try:
            async with self._session.request(
                method, url, data=body, headers=headers, ssl=self._ssl, allow_redirects=False
            ) as resp:
                if 300 <= resp.status < 400:
                    raise ServiceUnavailable(
                        reason=f"the directory answered with a redirect (HTTP {resp.status}), "
                        "which is not followed"
                    )
                if resp.status >= 300 and resp.status not in ok:
                    raise ServiceUnavailable(reason=f"the directory answered {resp.status}")
        except (aiohttp.ClientError, TimeoutError) as e:
            raise ServiceUnavailable(reason=f"the directory cannot be reached ({e})") from None

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()


class EnvironmentDirectories:
    """``DirectoryPublisher``: the indexer of each environment that has one configured. In an
    environment without one, nothing is sent (the participant's business card is served by
    its SMP only, and no outside directory is contacted)."""

    def __init__(self, indexers: Mapping[Environment, IndexerDirectoryPublisher]) -> None:
        self._indexers = dict(indexers)

    async def publish(self, environment: Environment, participant: str) -> None:
        indexer = self._indexers.get(environment)
        if indexer is not None:
            await indexer.publish(participant)

    async def withdraw(self, environment: Environment, participant: str) -> None:
        indexer = self._indexers.get(environment)
        if indexer is not None:
            await indexer.withdraw(participant)

    async def aclose(self) -> None:
        for indexer in self._indexers.values():
            await indexer.aclose()

    def __repr__(self) -> str:
        urls = ", ".join(f"{env.value}: {i.url}" for env, i in self._indexers.items())
        return f"EnvironmentDirectories({urls or 'none'})"
