"""POSTs webhook deliveries with a small HTTP/1.1 client (``client.Http1Client``): a 15 s
timeout for the whole exchange, and no private targets unless allowed. Of the receiver's
answer only the first ``KEPT_ANSWER_BYTES`` are kept, for the attempt's record; a long rest
is not read (the connection is closed instead of kept). An endpoint that answers 429 or 503
is busy (``retry_after.BUSY``): the wait its ``Retry-After`` asks for is read
(``retry_after.asked_wait``: delta-seconds or an HTTP-date, at most an hour) for the worker to
schedule the next attempt by.

Addresses are checked after DNS resolution, so a public name that resolves to a private
address (DNS rebinding) is refused as well. Names are resolved on the event loop
(``names.HostResolver``), within the delivery's time: a name server that never answers holds
no thread that other work shares.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime

from fourcorner.adapters.retry_after import BUSY, asked_wait
from fourcorner.adapters.webhooks.client import AnswerUnreadable, Http1Client
from fourcorner.adapters.webhooks.names import HostResolver
from fourcorner.application.ports import SendResult
from fourcorner.domain.webhook_target import address_problem

KEPT_ANSWER_BYTES = 1024


class Http1WebhookSender:
    def __init__(
        self,
        *,
        timeout: float = 15.0,
        allow_private_targets: bool = False,
        limit: int = 100,
        resolver: HostResolver | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        """``resolver``: how webhook hosts are resolved (by default the system's name servers
        and hosts file, a lookup lasting at most ``timeout``); ``clock``: now, what a
        ``Retry-After`` date is a wait from."""
        self._timeout = timeout
        self._clock = clock
        self._allow_private = allow_private_targets
        self._limit = limit
        self._resolver = resolver or HostResolver(lifetime=timeout)
        self._http: Http1Client | None = None

    def _client(self) -> Http1Client:
        if self._http is None:
            check = None if self._allow_private else address_problem
            self._http = Http1Client(
                limit=self._limit, kept=KEPT_ANSWER_BYTES, check=check, resolver=self._resolver
            )
        return self._http

    async def send(self, url: str, body: bytes, headers: dict[str, str]) -> SendResult:
        started = time.perf_counter()
        try:
            async with asyncio.timeout(self._timeout):
                status, head, retry_after = await self._client().post(url, body, headers)
        except TimeoutError:
            return SendResult(_ms(started), error="timed out")
        except (AnswerUnreadable, OSError, ValueError) as e:
            return SendResult(_ms(started), error=f"{type(e).__name__}: {e}"[:500])
        kept = head.decode("utf-8", "replace")
        if status in BUSY:
            asked = asked_wait(retry_after, self._clock())
            return SendResult(
                _ms(started), status, response_body=kept, busy=True, retry_after=asked
            )
        return SendResult(_ms(started), status_code=status, response_body=kept)

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
