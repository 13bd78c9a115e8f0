"""The HTTP fetches of the revocation check (``adapters.pki.revocation``): a CA's revocation
list from a distribution point (GET), an OCSP answer from a responder (POST of the request),
each within its size cap and ``timeout``, following no redirect (the URL the CA named
answers, or nothing does). Every failure is ``Unusable``, saying why."""

from __future__ import annotations

from collections.abc import Callable

import aiohttp

from fourcorner.adapters.answer import AnswerTooLarge, read_capped
from fourcorner.adapters.pki.freshness import Unusable

SessionFactory = Callable[[], aiohttp.ClientSession]


class Fetcher:
    """The aiohttp session of the fetches, created on first use from ``session_factory``;
    once ``aclose()`` closed it, no fetch opens another."""

    def __init__(
        self, timeout: aiohttp.ClientTimeout, session_factory: SessionFactory | None = None
    ) -> None:
        self._timeout = timeout
        self._session_factory: SessionFactory = session_factory or aiohttp.ClientSession
        self._session: aiohttp.ClientSession | None = None
        self.closed = False

    async def fetch(
        self,
        url: str,
        what: str,
        *,
        accept: str,
        max_bytes: int,
        post: tuple[str, bytes] | None = None,
        within: float | None = None,
    ) -> bytes:
        """The body at ``url`` (``what`` it is, for the refusals: "the distribution point"),
        asked by GET, or by POST of ``post`` (its content type and body), within the bounds
        (and ``within`` seconds, when that is sooner: what is left of several fetches' time);
        ``Unusable`` says why not."""
        if self.closed:  # no session is opened after aclose() closed it
            raise Unusable("the revocation check is closed")
        if self._session is None or self._session.closed:
            self._session = self._session_factory()
        timeout = self._timeout
        if within is not None and (timeout.total is None or within < timeout.total):
            connect = within if timeout.connect is None else min(timeout.connect, within)
            timeout = aiohttp.ClientTimeout(total=within, connect=connect)
        headers = {"Accept": accept}
        if post is not None:
            headers["Content-Type"] = post[0]
        try:
            async with self._session.request(
                "GET" if post is None else "POST",
                url,
                headers=headers,
                data=None if post is None else post[1],
                timeout=timeout,
                allow_redirects=False,
            ) as response:
                status = response.status
                if status != 200:
                    redirect = " (redirects are not followed)" if 300 <= status < 400 else ""
                    raise Unusable(f"{what} answered HTTP {status}{redirect}")
                return await read_capped(response, max_bytes)
        except AnswerTooLarge as e:
            raise Unusable(f"the answer is larger than {e.limit} bytes") from None
        except TimeoutError:
            total = timeout.total or 0.0
            raise Unusable(f"{what} did not answer within {total:g} s") from None
        except (aiohttp.ClientError, OSError, ValueError) as e:
            raise Unusable(f"{what} cannot be reached: {e!r}"[:300]) from None

    async def aclose(self) -> None:
        """Open no session again, and close the one open."""
        self.closed = True
        session, self._session = self._session, None
        if session is not None and not session.closed:
            await session.close()
