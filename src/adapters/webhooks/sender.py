"""POSTs webhook deliveries with aiohttp: 15 s timeout, and no private targets unless allowed.
Of the receiver's answer only the first ``KEPT_ANSWER_BYTES`` are read, for the attempt's
record; the rest is never read.

Addresses are checked after DNS resolution, so a public name that resolves to a private
address (DNS rebinding) is refused as well.
"""

from __future__ import annotations

import socket
import time
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from fourcorner.adapters.answer import read_head
from fourcorner.application.ports import SendResult
from fourcorner.domain.webhook import address_problem

KEPT_ANSWER_BYTES = 1024


class _GuardedResolver(AbstractResolver):
    def __init__(self) -> None:
        self._inner = aiohttp.ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        problem = address_problem(host)
        if problem:
            raise OSError(problem)
        results = await self._inner.resolve(host, port, family)
        allowed = [r for r in results if address_problem(r["host"]) is None]
        if not allowed:
            raise OSError(f"{host} resolves only to addresses not allowed as webhook targets")
        return allowed

    async def close(self) -> None:
        await self._inner.close()


class AiohttpWebhookSender:
    def __init__(
        self, *, timeout: float = 15.0, allow_private_targets: bool = False, limit: int = 100
    ) -> None:
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._allow_private = allow_private_targets
        self._limit = limit
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            kwargs: dict[str, Any] = {"limit": self._limit, "limit_per_host": 0}
            if not self._allow_private:
                kwargs["resolver"] = _GuardedResolver()
            self._session = aiohttp.ClientSession(
                timeout=self._timeout, connector=aiohttp.TCPConnector(**kwargs)
            )
        return self._session

    async def send(self, url: str, body: bytes, headers: dict[str, str]) -> SendResult:
        started = time.perf_counter()
        try:
            async with self._client().post(
                url, data=body, headers=headers, allow_redirects=False
            ) as resp:
                status = resp.status
                head = await read_head(resp, KEPT_ANSWER_BYTES)
        except TimeoutError:
            return SendResult(_ms(started), error="timed out")
        except (aiohttp.ClientError, OSError) as e:
            return SendResult(_ms(started), error=f"{type(e).__name__}: {e}"[:500])
        return SendResult(
            _ms(started), status_code=status, response_body=head.decode("utf-8", "replace")
        )

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
