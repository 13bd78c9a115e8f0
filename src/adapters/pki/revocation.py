"""Revocation checking of peers' certificates, as a net access point does: by OCSP (RFC 6960)
where the certificate names responders (asked in turn until one answers, ``responder.in_turn``),
and by the CRL its CA publishes at the http(s) distribution points the certificate names where
it names no responder or OCSP gives no answer. A certificate revoked by the answer taken is
refused. An answer signed by a delegated responder counts once that responder is known not to
be revoked (``responder.delegate_checked``), unless its certificate says not to check it.

``RevocationChecker.check`` is synchronous, as the chain checks it follows are (it runs inside
the reading of an AS4 message and the SMP lookup's verification), and never waits for the
network. It keeps, per certificate (its OCSP CertID), the last answer of its responder that
verified (``ocsp.read_ocsp``), for 1024 certificates at most (``crl_source.MAX_ANSWERS``), and
per distribution point URL the last list fetched from there that verified against the issuer
of the certificate that named it (``crl.read_crl``), for 32 URLs at most
(``crl_source.MAX_SOURCES``). An answer or list is fetched when first needed, and again an
hour after it was fetched (``freshness.REFRESH_EVERY``; halfway to its nextUpdate when that is
sooner, but never sooner than 5 min after, ``freshness.REFRESH_LEAST``) at the first check
after that, in the background while the kept one answers: a check never waits for a fetch
while it holds an answer that counts. A failed fetch is tried again at the first check after
30 s, then after twice as long each time, at most 10 min apart, and meanwhile the answer kept
(if any) stays in use. An answer or list past its nextUpdate is used for ``grace`` more, then
no longer; one fetched already past that is refused as a failed fetch is.

A fetch follows no redirect and takes ``timeout`` seconds at most (``connect_timeout`` to
connect; the OCSP responders of a certificate asked in turn take that long in all, and the
check of a delegated responder's revocation that long more); a list is read up to
``max_bytes`` (20 MiB, DER or PEM), an OCSP answer up to ``max_ocsp_bytes`` (64 KiB; the
request is POSTed as ``application/ocsp-request``, with a nonce). Plain http is normal for
both (they are signed); the URLs come only from certificates whose chain to the network's CAs
was checked first.

When no answer is known, the first check raises ``CertificateStatusPending``, whose
``ready()`` waits up to ``wait`` seconds in all: for the OCSP answer first, then, when that
gave none, for the list. After that (and for every later check while neither is known)
``policy`` answers: ``SOFT`` accepts the certificate and logs a warning once per responder
and certificate, and once per list URL, ``HARD`` raises ``CertificateStatusUnknown`` (refused
for now, to be tried again), ``OFF`` checks nothing at all. So does it, without waiting, for
what cannot be kept while the fetches of all those kept are in flight. A certificate that
names neither an http OCSP responder nor an http(s) distribution point is checked against
nothing.
"""

from __future__ import annotations

import asyncio
import enum
import functools
import logging
import secrets
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import attrs
from cryptography import x509

from fourcorner.adapters.pki.certificates import instant
from fourcorner.adapters.pki.crl import KnownCrl, distribution_points, read_crl
from fourcorner.adapters.pki.crl_source import (
    MAX_ANSWERS,
    MAX_SOURCES,
    Fetches,
    K,
    Source,
    Sources,
)
from fourcorner.adapters.pki.fetch import Fetcher, SessionFactory
from fourcorner.adapters.pki.issuer import Issuer, issuer_of
from fourcorner.adapters.pki.ocsp import (
    MAX_OCSP_BYTES,
    NONCE_BYTES,
    KnownOcsp,
    read_ocsp,
    request_for,
    responders,
)
from fourcorner.adapters.pki.responder import delegate_checked, in_turn
from fourcorner.application.certificate_status import (
    CertificateStatusPending,
    CertificateStatusUnknown,
)
from fourcorner.domain.clock import utc

log = logging.getLogger("fourcorner.revocation")

MAX_CRL_BYTES = 20 * 1024 * 1024
_ACCEPT = "application/pkix-crl, application/x-pkcs7-crl;q=0.9, */*;q=0.1"

Clock = Callable[[], datetime]


class Policy(enum.Enum):
    """What a check answers while no revocation answer for the certificate is known."""

    OFF = "off"  # nothing is checked, nothing fetched
    SOFT = "soft"  # accepted, a warning logged once per responder/URL
    HARD = "hard"  # refused for now (``CertificateStatusUnknown``)


class CertificateRevoked(ValueError):
    """The certificate is revoked (its OCSP responder or its CA's list says so); the message
    says since when, and who says so."""


class RevocationChecker:
    """The revocation check of certificates issued by the network's CAs, by OCSP and CRL.

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
        max_ocsp_bytes: int = MAX_OCSP_BYTES,
        clock: Clock | None = None,
        session_factory: SessionFactory | None = None,
    ) -> None:
        self.policy = policy
        self._wait = wait
        self._grace = grace
        self._timeout = aiohttp.ClientTimeout(total=timeout, connect=min(connect_timeout, timeout))
        self._max_bytes = max_bytes
        self._max_ocsp_bytes = max_ocsp_bytes
        self._clock: Clock = clock or (lambda: datetime.now(UTC))
        self._fetcher = Fetcher(self._timeout, session_factory)
        self._sources: Sources[KnownCrl] = Sources()  # checks run in worker threads as well
        self._answers: Sources[KnownOcsp] = Sources(MAX_ANSWERS, "ocsp")
        self._fetches = Fetches(self._clock, grace)

    def check(self, cert: x509.Certificate, issuer: x509.Certificate, now: datetime) -> None:
        """Whether ``cert``, issued by ``issuer`` (its chain checked already), may be used at
        ``now`` as far as its OCSP responder, else its issuer's revocation lists, tell."""
        if self.policy is Policy.OFF:
            return
        asked, urls = responders(cert), distribution_points(cert)
        if not asked and not urls:
            return
        now, ca = utc(now), issuer_of(issuer)
        url, entry = asked[0] if asked else None, None
        if url is not None:
            entry = self._answers.get(url, _answer_key(ca, cert))
            if entry is not None:
                answer = self._usable(entry, now, functools.partial(self._answer, asked, cert, ca))
                if answer is not None:
                    if answer.revoked_on is not None:
                        raise CertificateRevoked(
                            f"revoked on {instant(answer.revoked_on)} "
                            f"(the OCSP responder at {answer.responder or url})"
                        )
                    return
                if self._pending(entry, now):
                    raise CertificateStatusPending(
                        f"the OCSP responder at {url} is being asked",
                        functools.partial(self._ready, entry, cert, ca),
                    )
        known, sources, waiting = self._by_crl(cert, ca, urls, now)
        if known:
            return
        if waiting:
            raise CertificateStatusPending(
                f"the revocation list at {waiting[0].url} is being fetched",
                functools.partial(self._ready, None, cert, ca),
            )
        self._unknown(url, entry, urls, sources)

    def _by_crl(
        self, cert: x509.Certificate, ca: Issuer, urls: Sequence[str], now: datetime
    ) -> tuple[bool, list[Source[KnownCrl]], list[Source[KnownCrl]]]:
        """Whether a list of ``cert``'s issuer that counts is kept for one of ``urls`` (and
        ``CertificateRevoked`` when it revokes ``cert``); the sources of ``urls`` kept, and
        those whose fetch is to be waited for. Starts the fetches due."""
        sources = [s for s in map(self._sources.get, urls) if s is not None]
        known, waiting = False, []
        for source in sources:
            crl = self._usable(source, now, functools.partial(self._list, source.url, ca))
            if crl is not None and crl.covers(cert, ca.key_sha256):
                known = True
                revoked = crl.revoked_on(cert.serial_number)
                if revoked is not None:
                    raise CertificateRevoked(
                        f"revoked on {instant(revoked)} (the revocation list at {source.url})"
                    )
            elif self._pending(source, now):
                waiting.append(source)
        return known, sources, waiting

    def _usable(
        self, source: Source[K], now: datetime, obtain: Callable[[], Awaitable[K]]
    ) -> K | None:
        """What ``source`` keeps, when it counts at ``now``; starts its fetch by ``obtain``
        when one is due (in the background: what is kept answers meanwhile)."""
        if source.due(now):
            self._fetches.start(source, obtain)
        return self._counting(source, now)

    def _counting(self, source: Source[K], now: datetime) -> K | None:
        """What ``source`` keeps, when it counts at ``now``."""
        known = source.known
        return known if known is not None and not known.lapsed(now, self._grace) else None

    @staticmethod
    def _pending(source: Source[K], now: datetime) -> bool:
        """Whether a check is to wait for ``source``'s fetch (none waited for it yet)."""
        return not source.waited and (source.task is not None or source.due(now))

    def _unknown(
        self,
        url: str | None,
        entry: Source[KnownOcsp] | None,
        urls: Sequence[str],
        sources: Sequence[Source[KnownCrl]],
    ) -> None:
        """Neither an OCSP answer (from the responder at ``url``, ``entry`` kept for it) nor a
        list of the issuer (the kept ``sources`` of ``urls``) is known: the policy answers."""
        reasons = []
        if url is not None:
            reasons.append(_ocsp_why(url, entry))
        if urls:
            reasons.append(_crl_why(urls[0], sources))
        why = "; ".join(reasons)
        if self.policy is Policy.HARD:
            raise CertificateStatusUnknown(why)
        if url is not None:
            self._warn(url, why, entry, self._answers)
        if urls and not sources:
            self._warn(urls[0], why, None, self._sources)
        for source in sources:
            self._warn(source.url, why, source, self._sources)

    @staticmethod
    def _warn(url: str, why: str, source: Source[K] | None, kept: Sources[K]) -> None:
        """Log that a certificate was accepted unchecked, once per ``source`` (or once while
        ``kept`` has no room) until an answer comes in."""
        if source is None:
            if kept.warned_full:
                return
            kept.warned_full = True
        elif source.warned:
            return
        else:
            source.warned = True
        log.warning(
            "a certificate was accepted without its revocation being checked",
            extra={"event": "revocation.unchecked", "url": url, "reason": why},
        )

    # --- fetching -------------------------------------------------------------------------------

    async def _ready(
        self, entry: Source[KnownOcsp] | None, cert: x509.Certificate, ca: Issuer
    ) -> None:
        """Wait ``wait`` seconds at most in all: for the OCSP answer of ``entry`` (when
        given), then, when it brought none, for the lists of ``cert``'s issuer. A check after
        that waits for none of them again until one of their fetches succeeded."""
        loop = self._fetches.loop = asyncio.get_running_loop()
        deadline = loop.time() + self._wait
        if entry is not None:
            now = utc(self._clock())
            if entry.due(now):
                obtain = functools.partial(self._answer, responders(cert), cert, ca)
                self._fetches.launch(entry, obtain)
            await _waited([entry], deadline)
            if self._counting(entry, utc(self._clock())) is not None:
                return
        try:
            _, _, waiting = self._by_crl(cert, ca, distribution_points(cert), utc(self._clock()))
        except CertificateRevoked:
            return
        await _waited(waiting, deadline)

    async def _list(self, url: str, ca: Issuer) -> KnownCrl:
        data = await self._fetcher.fetch(
            url, "the distribution point", accept=_ACCEPT, max_bytes=self._max_bytes
        )
        return await asyncio.to_thread(read_crl, data, ca.cert, utc(self._clock()))

    async def _answer(
        self, urls: Sequence[str], cert: x509.Certificate, ca: Issuer, *, depth: int = 0
    ) -> KnownOcsp:
        """The first answer for ``cert`` that counts of the responders at ``urls``, asked in
        turn within the fetch timeout in all (``responder.in_turn``). ``depth`` 1: it is about
        a delegated responder, and may not be signed by one whose revocation needs checking."""
        ask = functools.partial(self._asked, cert=cert, ca=ca, depth=depth)
        return await in_turn(urls, ask, self._timeout.total or None)

    async def _asked(
        self, url: str, within: float | None, *, cert: x509.Certificate, ca: Issuer, depth: int
    ) -> KnownOcsp:
        """The answer for ``cert`` of the responder at ``url``, asked with a new nonce, once it
        counts (its delegated signer's revocation checked, ``responder.delegate_checked``)."""
        nonce = secrets.token_bytes(NONCE_BYTES)
        data = await self._fetcher.fetch(
            url,
            "the OCSP responder",
            accept="application/ocsp-response",
            max_bytes=self._max_ocsp_bytes,
            post=("application/ocsp-request", request_for(cert, ca, nonce)),
            within=within,
        )
        now = utc(self._clock())
        known = await asyncio.to_thread(
            read_ocsp, data, cert, ca, now, nonce=nonce, delegates=depth == 0
        )
        if known.delegate is not None:
            await delegate_checked(
                known.delegate,
                cert,
                url,
                list_of=functools.partial(self._delegate_list, known.delegate, ca),
                answer_from=functools.partial(self._delegate_answer, known.delegate, ca),
                hard=self.policy is Policy.HARD,
                budget=self._timeout.total or None,
            )
        return attrs.evolve(known, responder=url)

    async def _delegate_list(
        self, delegate: x509.Certificate, ca: Issuer, url: str, within: float | None
    ) -> tuple[KnownCrl | None, str]:
        """The list from ``url`` of ``delegate``'s CA that counts, else why there is none
        (waiting ``within`` seconds at most for its fetch)."""
        source = self._sources.get(url)
        if source is None:
            return None, _crl_why(url, [])
        crl = await self._settled(source, functools.partial(self._list, url, ca), within)
        if crl is not None and crl.covers(delegate, ca.key_sha256):
            return crl, ""
        return None, _crl_why(url, [source])

    async def _delegate_answer(
        self, delegate: x509.Certificate, ca: Issuer, urls: Sequence[str], within: float | None
    ) -> tuple[KnownOcsp | None, str]:
        """The answer for ``delegate`` from the responders at ``urls`` that counts, else why
        there is none (waiting ``within`` seconds at most for its fetch)."""
        entry = self._answers.get(urls[0], _answer_key(ca, delegate))
        if entry is None:
            return None, _ocsp_why(urls[0], None)
        obtain = functools.partial(self._answer, urls, delegate, ca, depth=1)
        return await self._settled(entry, obtain, within), _ocsp_why(urls[0], entry)

    async def _settled(
        self, source: Source[K], obtain: Callable[[], Awaitable[K]], within: float | None
    ) -> K | None:
        """What ``source`` keeps that counts, waiting for its fetch (``within`` seconds at
        most; None: ``timeout``) when none does yet."""
        known = self._usable(source, utc(self._clock()), obtain)
        if known is None and source.task is not None:
            # not cancelled with the fetch that waits; bounded, whoever else waits for it
            wait = (self._timeout.total or None) if within is None else within
            await asyncio.wait([source.task], timeout=wait)
            known = self._counting(source, utc(self._clock()))
        return known

    def _all(self) -> list[Source[Any]]:
        return [*self._sources.all(), *self._answers.all()]

    async def idle(self) -> None:
        """Wait until no fetch is in flight."""
        while tasks := [s.task for s in self._all() if s.task is not None]:
            await asyncio.wait(tasks)

    async def aclose(self) -> None:
        """Stop the fetches in flight, start no other, and close the session."""
        self._fetcher.closed = self._fetches.closed = True
        tasks = [s.task for s in self._all() if s.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._fetcher.aclose()

    def __repr__(self) -> str:
        return (
            f"RevocationChecker(policy={self.policy.value}, lists={len(self._sources)}, "
            f"answers={len(self._answers)})"
        )


async def _waited(sources: Sequence[Source[K]], deadline: float) -> None:
    """Wait for the fetches of ``sources`` until ``deadline`` (the loop's time); each of them
    whose fetch is in flight or failed counts as waited for after that."""
    loop = asyncio.get_running_loop()
    tasks = [source.task for source in sources if source.task is not None]
    try:
        if tasks:
            await asyncio.wait(tasks, timeout=max(0.0, deadline - loop.time()))
    finally:
        for source in sources:
            if source.task is not None or source.error:
                source.waited = True


def _answer_key(ca: Issuer, cert: x509.Certificate) -> str:
    """What the answers for ``cert`` are kept under: its OCSP CertID."""
    return f"{ca.cert_id}:{cert.serial_number:x}"


def _ocsp_why(url: str, entry: Source[KnownOcsp] | None) -> str:
    if entry is None:
        return (
            f"the OCSP responder at {url} is not asked: the answers for {MAX_ANSWERS} other "
            "certificates are being fetched"
        )
    if entry.error:
        return f"the OCSP responder at {url} gave no answer: {entry.error}"
    return f"the OCSP responder at {url} has not answered yet"


def _crl_why(url: str, sources: Sequence[Source[KnownCrl]]) -> str:
    if not sources:
        return (
            f"the revocation list at {url} is not fetched: the lists of {MAX_SOURCES} "
            "other distribution points are being fetched"
        )
    if sources[0].error:
        return f"the revocation list at {sources[0].url} could not be fetched: {sources[0].error}"
    return f"the revocation list at {sources[0].url} is not fetched yet"
