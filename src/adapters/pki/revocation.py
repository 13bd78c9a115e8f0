"""Revocation checking of peers' certificates by CRL, as a net access point does: the network's
CAs publish their revocation lists at the http(s) CRL distribution points each certificate
names, and a certificate on its issuer's list is refused.

``CrlChecker.check`` is synchronous, as the chain checks it follows are (it runs inside the
reading of an AS4 message and the SMP lookup's verification), and never waits for the network.
Per distribution point URL it keeps the last list fetched from there that verified against
the issuer of the certificate that named it (``crl.read_crl``), for 32 URLs at most
(``crl_source.Sources``). A list is fetched when a certificate first names its URL, again an
hour after it was fetched (``crl.REFRESH_EVERY``; halfway to its nextUpdate when that is
sooner, but never sooner than 5 min after, ``crl.REFRESH_LEAST``) at the first check after
that, in the background while the kept one is used; a failed fetch is tried again at the
first check after 30 s, then after twice as long each time, at most 10 min apart, and
meanwhile the list kept (if any) stays in use. A list past its nextUpdate is used for
``grace`` more, then no longer; one fetched already past that is refused as a failed fetch is
(a CA late with its next list is not asked at every check).

A fetch reads at most ``max_bytes`` (20 MiB; a larger list is cut off as it is read, or
refused unread when its length says so) within ``timeout`` seconds (``connect_timeout`` to
connect), follows no redirect, and takes DER or PEM. Plain http is normal for these lists
(they are signed); the URLs come only from certificates whose chain to the network's CAs
was checked first.

When no list of a certificate's issuer is known, the first check raises
``CertificateStatusPending``, whose ``ready()`` waits up to ``wait`` seconds for the fetch;
after that (and for every later check while none is known) ``policy`` answers: ``SOFT``
accepts the certificate and logs a warning once per URL, ``HARD`` raises
``CertificateStatusUnknown`` (refused for now, to be tried again), ``OFF`` checks nothing at
all. So does it, without waiting, for a URL not kept while the fetches of all 32 kept are in
flight. A certificate that names no http(s) distribution point is checked against nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import functools
import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

import aiohttp
from cryptography import x509

from fourcorner.adapters.answer import AnswerTooLarge, read_capped
from fourcorner.adapters.pki.certificates import instant, public_key_sha256
from fourcorner.adapters.pki.crl import CrlRefused, distribution_points, read_crl
from fourcorner.adapters.pki.crl_source import MAX_SOURCES, Source, Sources
from fourcorner.application.certificate_status import (
    CertificateStatusPending,
    CertificateStatusUnknown,
)
from fourcorner.domain.clock import utc

log = logging.getLogger("fourcorner.revocation")

MAX_CRL_BYTES = 20 * 1024 * 1024
_ACCEPT = "application/pkix-crl, application/x-pkcs7-crl;q=0.9, */*;q=0.1"

Clock = Callable[[], datetime]
SessionFactory = Callable[[], aiohttp.ClientSession]


class Policy(enum.Enum):
    """What a check answers while no revocation list of the certificate's issuer is known."""

    OFF = "off"  # nothing is checked, nothing fetched
    SOFT = "soft"  # accepted, a warning logged once per URL
    HARD = "hard"  # refused for now (``CertificateStatusUnknown``)


class CertificateRevoked(ValueError):
    """The certificate is on its issuer's revocation list; the message says since when."""


class CrlChecker:
    """The revocation check of certificates issued by the network's CAs, by their CRLs.

    ``check(cert, issuer, now)`` raises ``CertificateRevoked`` (a ``ValueError``) for a
    revoked certificate, ``CertificateStatusPending`` or ``CertificateStatusUnknown`` as the
    module says. The aiohttp session is created on first use from ``session_factory`` and
    owned by the checker: ``aclose()`` stops the fetches in flight and closes it.
    """

    def __init__(
        self,
        policy: Policy = Policy.SOFT,
        *,
        wait: float = 5.0,
        grace: timedelta = timedelta(hours=24),
        timeout: float = 30.0,
        connect_timeout: float = 10.0,
        max_bytes: int = MAX_CRL_BYTES,
        clock: Clock | None = None,
        session_factory: SessionFactory | None = None,
    ) -> None:
        self.policy = policy
        self._wait = wait
        self._grace = grace
        self._timeout = aiohttp.ClientTimeout(total=timeout, connect=min(connect_timeout, timeout))
        self._max_bytes = max_bytes
        self._clock: Clock = clock or (lambda: datetime.now(UTC))
        self._session_factory: SessionFactory = session_factory or aiohttp.ClientSession
        self._session: aiohttp.ClientSession | None = None
        self._sources = Sources()  # checks run in worker threads as well
        self._loop: asyncio.AbstractEventLoop | None = None  # where fetches run
        self._closed = False  # no fetch starts once set (``aclose``)

    def check(self, cert: x509.Certificate, issuer: x509.Certificate, now: datetime) -> None:
        """Whether ``cert``, issued by ``issuer`` (its chain checked already), may be used at
        ``now`` as far as its issuer's revocation lists tell."""
        if self.policy is Policy.OFF:
            return
        urls = distribution_points(cert)
        if not urls:
            return
        now, issuer_key = utc(now), public_key_sha256(issuer)
        sources = [s for s in map(self._sources.get, urls) if s is not None]
        known, waiting = False, []
        for source in sources:
            if source.due(now):
                self._start(source, issuer)
            crl = source.known
            if (
                crl is not None
                and crl.covers(cert, issuer_key)
                and not crl.lapsed(now, self._grace)
            ):
                known = True
                revoked = crl.revoked_on(cert.serial_number)
                if revoked is not None:
                    raise CertificateRevoked(
                        f"revoked on {instant(revoked)} (the revocation list at {source.url})"
                    )
            elif not source.waited and (source.task is not None or source.due(now)):
                waiting.append(source)
        if known:
            return
        if waiting:
            raise CertificateStatusPending(
                f"the revocation list at {waiting[0].url} is being fetched",
                functools.partial(self._ready, waiting, issuer),
            )
        self._unknown(urls[0], sources)

    def _unknown(self, url: str, sources: Sequence[Source]) -> None:
        """No list of the issuer is known for any of ``sources`` (the kept sources of the
        certificate's URLs, the first ``url``): the policy answers."""
        if not sources:
            why = (
                f"the revocation list at {url} is not fetched: the lists of {MAX_SOURCES} "
                "other distribution points are being fetched"
            )
        elif sources[0].error:
            why = (
                f"the revocation list at {sources[0].url} could not be fetched: {sources[0].error}"
            )
        else:
            why = f"the revocation list at {sources[0].url} is not fetched yet"
        if self.policy is Policy.HARD:
            raise CertificateStatusUnknown(why)
        if not sources and not self._sources.warned_full:
            self._sources.warned_full = True
            self._unchecked(url, why)
        for source in sources:
            if not source.warned:
                source.warned = True
                self._unchecked(source.url, why)

    @staticmethod
    def _unchecked(url: str, why: str) -> None:
        log.warning(
            "a certificate was accepted without its revocation being checked",
            extra={"event": "revocation.unchecked", "url": url, "reason": why},
        )

    # --- fetching -------------------------------------------------------------------------------

    def _start(self, source: Source, issuer: x509.Certificate) -> None:
        """Start fetching ``source``'s list: on the running loop, or from a worker thread on
        the loop fetches ran on before (none known yet: ``ready()`` starts it)."""
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            known = self._loop
            if known is not None and not known.is_closed():
                with contextlib.suppress(RuntimeError):  # closed meanwhile
                    known.call_soon_threadsafe(self._launch, source, issuer)
            return
        self._launch(source, issuer)

    def _launch(self, source: Source, issuer: x509.Certificate) -> None:
        if source.task is None and not self._closed:
            source.task = asyncio.get_running_loop().create_task(self._fetch(source, issuer))

    async def _ready(self, waiting: Sequence[Source], issuer: x509.Certificate) -> None:
        """Wait until the fetches of ``waiting`` are done, ``wait`` seconds at most; a check
        after that waits for none of them again until one of their fetches succeeded."""
        self._loop = asyncio.get_running_loop()
        now = utc(self._clock())
        for source in waiting:
            if source.due(now):
                self._launch(source, issuer)
        tasks = [source.task for source in waiting if source.task is not None]
        try:
            if tasks:
                await asyncio.wait(tasks, timeout=self._wait)
        finally:
            for source in waiting:
                if source.task is not None or source.error:
                    source.waited = True

    async def _fetch(self, source: Source, issuer: x509.Certificate) -> None:
        try:
            data = await self._download(source.url)
            now = utc(self._clock())
            crl = await asyncio.to_thread(read_crl, data, issuer, now)
            kept = source.known
            if (
                kept is not None
                and kept.issuer == crl.issuer
                and crl.this_update < kept.this_update
            ):
                raise CrlRefused(
                    f"it is older than the list kept (thisUpdate {instant(crl.this_update)})"
                )
            if crl.lapsed(now, self._grace):
                raise CrlRefused(
                    f"it is out of date: its nextUpdate {instant(crl.next_update)} is past by "
                    f"more than the grace of {self._grace.total_seconds():g} s"
                )
        except CrlRefused as e:
            self._failed(source, str(e))
        except Exception as e:  # a bug of ours: the list is not used, and asked for later
            log.exception("revocation list unreadable", extra={"url": source.url})
            self._failed(source, f"it could not be read: {e!r}"[:300])
        else:
            source.took(crl)
            log.info(
                "revocation list fetched",
                extra={
                    "event": "revocation.fetched",
                    "url": source.url,
                    "revoked": len(crl.serials),
                    "next_update": instant(crl.next_update),
                },
            )
        finally:
            source.task = None

    def _failed(self, source: Source, why: str) -> None:
        delay, news = source.failed(why, utc(self._clock()))
        log.log(
            logging.WARNING if news else logging.INFO,
            "revocation list not fetched",
            extra={
                "event": "revocation.fetch_failed",
                "url": source.url,
                "reason": why,
                "retry_in": delay.total_seconds(),
            },
        )

    async def _download(self, url: str) -> bytes:
        """The body at ``url``, within the bounds; ``CrlRefused`` says why not."""
        if self._closed:  # no session is opened after aclose() closed it
            raise CrlRefused("the revocation check is closed")
        if self._session is None or self._session.closed:
            self._session = self._session_factory()
        try:
            async with self._session.get(
                url,
                headers={"Accept": _ACCEPT},
                timeout=self._timeout,
                allow_redirects=False,  # the URL the CA named answers, or nothing does
            ) as response:
                status = response.status
                if status != 200:
                    redirect = " (redirects are not followed)" if 300 <= status < 400 else ""
                    raise CrlRefused(f"the distribution point answered HTTP {status}{redirect}")
                return await read_capped(response, self._max_bytes)
        except AnswerTooLarge as e:
            raise CrlRefused(f"the list is larger than {e.limit} bytes") from None
        except TimeoutError:
            total = self._timeout.total or 0.0
            raise CrlRefused(f"the distribution point did not answer within {total:g} s") from None
        except (aiohttp.ClientError, OSError, ValueError) as e:
            raise CrlRefused(f"the distribution point cannot be reached: {e!r}"[:300]) from None

    async def idle(self) -> None:
        """Wait until no fetch is in flight."""
        while tasks := [s.task for s in self._sources.all() if s.task is not None]:
            await asyncio.wait(tasks)

    async def aclose(self) -> None:
        """Stop the fetches in flight, start no other, and close the session."""
        self._closed = True
        tasks = [s.task for s in self._sources.all() if s.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        session, self._session = self._session, None
        if session is not None and not session.closed:
            await session.close()

    def __repr__(self) -> str:
        return f"CrlChecker(policy={self.policy.value}, sources={len(self._sources)})"
