"""Looks up a participant's endpoint in its SMP (SMP 1.x, signed ServiceMetadata) over aiohttp.

The SMP is found by ``discovery`` (the network's SML by DNS, or one fixed SMP) for the
environment asked about. Its answer counts only if it is signed (enveloped XML-DSig) by a
certificate that chains to that environment's SMP CA and is valid now (``Trust``), and the
document names the participant (case-insensitively) and the document type (exactly) that were
asked for. A Redirect is followed once; the target's signer must match the redirect's
``CertificateUID`` and pass the same checks. An endpoint is used only if it is active now, its
address is https (plain http only to loopback, or when http peers are allowed) and the
certificate it publishes chains to the environment's AP CA and is valid now: nothing is
encrypted for any other.

The certificate checks of ``Trust`` may not know yet whether a certificate is revoked (its OCSP
answer or its issuer's revocation list is being fetched): the lookup then waits for it once, a bounded time
(``certificate_status.settled``), and a status that stays unknown is ``REVOCATION_UNKNOWN``.

Every failure is an ``SmpLookupError`` whose ``problem`` says what kind it is; only
``UNREACHABLE`` (network trouble, timeouts, 5xx) and ``REVOCATION_UNKNOWN`` may go away by
asking again later. Answers are cached as their HTTP caching headers allow (``AnswerCache``)
and verified on every use: the trust in their signer is checked again each time (valid now,
under the environment's CA, not revoked), while the enveloped signature and the document it
covers, which are a function of the bytes alone, are checked and read once for the same bytes
(kept by their SHA-256, ``SIGNED``).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TypeVar

import aiohttp
from cryptography import x509
from lxml import etree
from multidict import CIMultiDict
from yarl import URL

from fourcorner.adapters.answer import AnswerTooLarge, read_capped
from fourcorner.adapters.smp.answers import (
    DEFAULT_TRANSPORT_PROFILE,
    LookupResult,
    VerifiedMetadata,
    normalise_dn,
    participant_of,
    published_certificate,
    subject_forms,
    wire,
)
from fourcorner.adapters.smp.cache import AnswerCache
from fourcorner.adapters.smp.discovery import Discovery, FixedDiscovery
from fourcorner.adapters.smp.errors import Problem, SmpLookupError
from fourcorner.adapters.smp.signature import SignatureError, verify_enveloped
from fourcorner.adapters.smp.trust import Trust, plain_http_refused
from fourcorner.adapters.smp.xml import (
    MalformedDocument,
    ParsedEndpoint,
    ParsedMetadata,
    parse_path_segment,
    parse_service_group,
    parse_untrusted,
    path_segment,
    read_signed_service_metadata,
)
from fourcorner.application.certificate_status import (
    CertificateStatusUnknown,
    most_hopeful,
    settled,
)
from fourcorner.domain import wildcard
from fourcorner.domain.clock import utc
from fourcorner.domain.network_services import Environment

WIRE_WILDCARD_SCHEME = wire("net-doctype-wildcard")  # the scheme of PINT document types

MAX_DOCUMENT_BYTES = 1 << 20
MAX_REQUESTS = 3
"""Requests to the SMP one ``endpoint`` lookup makes at most, each bounded by the client's
``timeout``: the ServiceGroup (to match a wildcard document type), the ServiceMetadata, then
its Redirect's target or, when it is not found, the ServiceGroup again (is the participant
registered at all?)."""
REVOCATION_WAITS = 3
"""Certificate checks one ``endpoint`` lookup may wait for (``checked``), each up to the
revocation check's wait for an answer it lacks: the SMP's signer, its Redirect target's signer,
then the endpoint's certificate (all its candidates at once)."""
SIGNED = 256  # answers whose signature checked out, kept by their bytes (``_signed_metadata``)
_RETRYABLE_4XX = frozenset({408, 425, 429})

T = TypeVar("T")
Clock = Callable[[], datetime]
SessionFactory = Callable[[], aiohttp.ClientSession]

__all__ = [
    "DEFAULT_TRANSPORT_PROFILE",
    "LookupResult",
    "Problem",
    "SmpLookupClient",
    "SmpLookupError",
    "VerifiedMetadata",
]


def _system_clock() -> datetime:
    return datetime.now(UTC)


class SmpLookupClient:
    """Finds the endpoint for (participant, document type, process, transport profile) in an
    environment.

    ``discovery`` finds the SMP (a plain URL is one fixed SMP); ``trust`` holds each
    environment's certificate checks. The aiohttp session is created on first use from
    ``session_factory`` and owned by the client: ``aclose()`` closes it.
    """

    def __init__(
        self,
        discovery: Discovery | str,
        trust: Mapping[Environment, Trust],
        *,
        allow_http: bool = False,
        session_factory: SessionFactory | None = None,
        timeout: float = 10.0,
        clock: Clock | None = None,
        cache: AnswerCache | None = None,
    ) -> None:
        self._discovery = FixedDiscovery(discovery) if isinstance(discovery, str) else discovery
        self._trust = dict(trust)
        self._allow_http = allow_http
        self._timeout = timeout
        self._session_factory = session_factory or self._default_session
        self._session: aiohttp.ClientSession | None = None
        self._clock: Clock = clock or _system_clock
        self.cache = cache if cache is not None else AnswerCache()
        # answers whose signature checked out, read, by the SHA-256 of their bytes
        self._signed: OrderedDict[bytes, tuple[ParsedMetadata, x509.Certificate]] = OrderedDict()

    def _default_session(self) -> aiohttp.ClientSession:
        return aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self._timeout))

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None and not session.closed:
            await session.close()

    def _now(self) -> datetime:
        return utc(self._clock())

    def _trust_of(self, environment: Environment) -> Trust:
        trust = self._trust.get(environment)
        if trust is None:
            raise SmpLookupError(
                f"no trust anchors are configured for {environment.value}", Problem.SMP_UNTRUSTED
            )
        return trust

    # --- the lookup ---------------------------------------------------------------------------

    async def smp_url(self, participant: tuple[str, str], environment: Environment) -> str:
        """The base URL of the participant's SMP (no trailing slash)."""
        return (await self._discovery.smp_url(participant, environment)).rstrip("/")

    async def document_types(
        self, participant: str, environment: Environment
    ) -> tuple[str, list[tuple[str, str]]]:
        """The SMP's URL and the document types its ServiceGroup lists for ``participant``."""
        wanted = participant_of(participant)
        base = await self.smp_url(wanted, environment)
        return base, await self._listed(base, wanted, environment)

    async def _listed(
        self, base: str, wanted: tuple[str, str], environment: Environment
    ) -> list[tuple[str, str]]:
        """The document types the ServiceGroup of ``wanted`` at the SMP ``base`` lists."""
        data = await self._fetch(f"{base}/{path_segment(*wanted)}", environment)
        try:
            hrefs = parse_service_group(data)
        except MalformedDocument as e:
            raise SmpLookupError(
                f"the SMP's ServiceGroup cannot be read: {e}", Problem.SMP_UNTRUSTED
            ) from e
        found: list[tuple[str, str]] = []
        for href in hrefs:
            _, separator, segment = href.rpartition("/services/")
            try:
                document = parse_path_segment(segment) if separator else None
            except ValueError:
                document = None
            if document is not None and document not in found:
                found.append(document)
        return found

    async def metadata(
        self, participant: str, document: tuple[str, str], environment: Environment
    ) -> VerifiedMetadata:
        """The verified ServiceMetadata of ``participant`` (``0088:…`` or ``scheme::value``) for
        ``document`` (a ``(scheme, value)`` pair), a Redirect followed once."""
        wanted_participant = participant_of(participant)
        wanted_document = (wire(document[0]), document[1])
        base = await self.smp_url(wanted_participant, environment)
        if wanted_document[0] == WIRE_WILDCARD_SCHEME:
            wanted_document = await self._wildcard_match(
                base, wanted_participant, wanted_document, environment
            )
        url = (
            f"{base}/{path_segment(*wanted_participant)}/services/{path_segment(*wanted_document)}"
        )
        try:
            answer = await self._fetch(url, environment)
        except SmpLookupError as e:
            if e.problem is Problem.NOT_REGISTERED:  # the participant, or this document type?
                await self._registered(f"{base}/{path_segment(*wanted_participant)}", environment)
            raise
        metadata, signer = await self.checked(
            lambda: self._verified_at(url, answer, environment), "the SMP signing certificate"
        )
        if metadata.redirect is not None:
            redirect = metadata.redirect
            target = await self._fetch(redirect.href, environment)
            metadata, signer = await self.checked(
                lambda: self._verified_at(redirect.href, target, environment),
                "the SMP signing certificate",
            )
            if metadata.redirect is not None:
                raise SmpLookupError(
                    "the SMP redirected twice; only one redirect is followed",
                    Problem.SMP_UNTRUSTED,
                )
            if normalise_dn(redirect.certificate_uid) not in subject_forms(signer):
                raise SmpLookupError(
                    "the redirect target is signed by a certificate other than its "
                    f"CertificateUID {redirect.certificate_uid!r}",
                    Problem.SMP_UNTRUSTED,
                )

        participant_found = metadata.participant or ("", "")
        if (participant_found[0].lower(), participant_found[1].lower()) != wanted_participant:
            raise SmpLookupError(
                f"the SMP answered for participant {'::'.join(participant_found)!r}",
                Problem.SMP_UNTRUSTED,
            )
        if metadata.document != wanted_document:
            raise SmpLookupError(
                f"the SMP answered for document type {'::'.join(metadata.document or ())!r}",
                Problem.SMP_UNTRUSTED,
            )
        return VerifiedMetadata(base, metadata, signer, environment)

    async def _wildcard_match(
        self,
        base: str,
        participant: tuple[str, str],
        document: tuple[str, str],
        environment: Environment,
    ) -> tuple[str, str]:
        """The registration of the wildcard scheme that a sender of ``document`` picks among
        those the participant's ServiceGroup lists (``domain.wildcard``: the value itself, its
        customization id with ``*``, then shorter ones cut at ``@``)."""
        types = await self._listed(base, participant, environment)
        listed = [value for scheme, value in types if scheme == WIRE_WILDCARD_SCHEME]
        chosen = wildcard.best_match(document[1], listed)
        if chosen is None:
            raise SmpLookupError(
                "the receiver is registered, but for no document type of the wildcard scheme "
                f"that covers {document[1]!r}",
                Problem.NOT_ACCEPTED,
            )
        return (document[0], chosen)

    async def _registered(self, service_group: str, environment: Environment) -> None:
        """After a document type's metadata was not found: when the participant's ServiceGroup
        is there, the receiver is registered but does not accept that document type
        (``NOT_ACCEPTED``); otherwise nothing is raised and the caller's error stands."""
        try:
            await self._fetch(service_group, environment)
        except SmpLookupError:
            return
        raise SmpLookupError(
            "the receiver is registered, but not for this document type", Problem.NOT_ACCEPTED
        )

    async def endpoint(
        self,
        participant: str,
        document: tuple[str, str],
        process: tuple[str, str],
        transport_profile: str = DEFAULT_TRANSPORT_PROFILE,
        *,
        environment: Environment,
    ) -> LookupResult:
        """The endpoint registered for ``participant`` (``0088:…`` or ``scheme::value``),
        ``document`` and ``process`` (``(scheme, value)`` pairs) with ``transport_profile``."""
        verified = await self.metadata(participant, document, environment)
        wanted = (wire(process[0]), process[1])
        return await self.checked(
            lambda: self._choose(verified, wanted, wire(transport_profile)),
            "the endpoint certificate",
        )

    async def checked(self, check: Callable[[], T], what: str) -> T:
        """``check()``, a step that checks certificates; once more after waiting for the
        revocation list it lacked (``CertificateStatusPending``). ``REVOCATION_UNKNOWN`` when
        whether ``what`` is revoked still cannot be told."""

        async def attempt() -> T:
            return check()

        try:
            return await settled(attempt)
        except CertificateStatusUnknown as e:
            raise SmpLookupError(
                f"whether {what} is revoked cannot be checked yet: {e.reason}",
                Problem.REVOCATION_UNKNOWN,
            ) from None

    def _choose(
        self, verified: VerifiedMetadata, process: tuple[str, str], profile: str
    ) -> LookupResult:
        """The first endpoint of ``process`` with ``profile`` that may be used now. When none
        may: while the revocation of some candidates' certificates is not known, that (to be
        waited for, or tried again later), else why the first was refused."""
        processes = [p for p in verified.metadata.processes if (p.scheme, p.value) == process]
        if not processes:
            raise SmpLookupError(
                f"process {'::'.join(process)!r} is not registered", Problem.NOT_ACCEPTED
            )
        candidates = [e for p in processes for e in p.endpoints if e.transport_profile == profile]
        if not candidates:
            raise SmpLookupError(
                f"no endpoint with transport profile {profile!r}", Problem.NOT_ACCEPTED
            )
        first: SmpLookupError | None = None
        unknown: list[CertificateStatusUnknown] = []
        for candidate in candidates:
            try:
                return self.usable(candidate, verified)
            except SmpLookupError as e:
                first = first or e
            except CertificateStatusUnknown as e:  # the next candidate may pass all the same
                unknown.append(e)
        if unknown:  # a candidate that may pass later beats one refused for good
            raise most_hopeful(unknown)
        assert first is not None
        raise first

    def usable(self, endpoint: ParsedEndpoint, verified: VerifiedMetadata) -> LookupResult:
        """``endpoint`` of ``verified``, if a document may be sent to it now: active, its
        address allowed, its certificate trusted in the environment. Raises otherwise
        (``CertificateStatusPending``/``Unknown`` too: call it through ``checked``)."""
        now = self._now()
        if endpoint.activation is not None and now < endpoint.activation:
            raise SmpLookupError(
                f"the endpoint is active only from {endpoint.activation}", Problem.NOT_ACCEPTED
            )
        if endpoint.expiration is not None and now >= endpoint.expiration:
            raise SmpLookupError(
                f"the endpoint expired at {endpoint.expiration}", Problem.NOT_ACCEPTED
            )
        try:
            address = URL(endpoint.address, encoded=True)
        except ValueError:
            address = None
        if address is None or address.scheme not in ("https", "http") or not address.host:
            raise SmpLookupError(
                f"the endpoint address {endpoint.address!r} is not a URL", Problem.NOT_REGISTERED
            )
        if plain_http_refused(address, allow_http=self._allow_http):
            raise SmpLookupError(
                f"the endpoint address {endpoint.address!r} is plain http; access points are "
                "reached over https",
                Problem.INSECURE,
            )
        certificate = published_certificate(endpoint)
        if certificate is None:
            raise SmpLookupError(
                "the endpoint certificate cannot be read", Problem.ENDPOINT_UNTRUSTED
            )
        try:
            self._trust_of(verified.environment).access_point(certificate, now)
        except ValueError as e:
            raise SmpLookupError(
                f"the endpoint certificate is refused: {e}", Problem.ENDPOINT_UNTRUSTED
            ) from None
        return LookupResult(
            url=endpoint.address,
            certificate=certificate,
            transport_profile=endpoint.transport_profile,
            activation=endpoint.activation,
            expiration=endpoint.expiration,
            technical_contact_url=endpoint.technical_contact_url,
            description=endpoint.description,
            smp_certificate=verified.signer,
        )

    # --- fetching and verifying ---------------------------------------------------------------

    def _verified_at(
        self, url: str, data: bytes, environment: Environment
    ) -> tuple[ParsedMetadata, x509.Certificate]:
        """``_verified`` of the answer at ``url``; one refused is not kept by the HTTP cache,
        so the next lookup asks the SMP again (one that mended it is believed then, not once
        the refused answer's max-age has run out)."""
        try:
            return self._verified(data, environment)
        except SmpLookupError:
            self.cache.forget(url)
            raise

    def _verified(
        self, data: bytes, environment: Environment
    ) -> tuple[ParsedMetadata, x509.Certificate]:
        metadata, signer = self._signed_metadata(data)
        try:
            self._trust_of(environment).smp(signer, self._now())
        except ValueError as e:
            raise SmpLookupError(
                f"the SMP signing certificate is not trusted: {e}", Problem.SMP_UNTRUSTED
            ) from None
        return metadata, signer

    def _signed_metadata(self, data: bytes) -> tuple[ParsedMetadata, x509.Certificate]:
        """The metadata ``data`` holds and the certificate that signed it, once its enveloped
        signature checks out: checked once for the same bytes (the last ``SIGNED`` kept)."""
        key = hashlib.sha256(data).digest()
        known = self._signed.get(key)
        if known is not None:
            self._signed.move_to_end(key)
            return known
        try:
            root: etree._Element = parse_untrusted(data)
            signer = verify_enveloped(root, None)
            metadata = read_signed_service_metadata(root)
        except SignatureError as e:
            raise SmpLookupError(
                f"the SMP signature is refused: {e.reason}", Problem.SMP_UNTRUSTED
            ) from e
        except MalformedDocument as e:
            raise SmpLookupError(
                f"the SMP answer cannot be read: {e}", Problem.SMP_UNTRUSTED
            ) from e
        self._signed[key] = metadata, signer
        if len(self._signed) > SIGNED:
            self._signed.popitem(last=False)
        return metadata, signer

    async def _fetch(self, url: str, environment: Environment) -> bytes:
        """The answer at ``url``: from the cache while fresh, else over the network."""
        try:
            target = URL(url, encoded=True)
        except ValueError as e:
            raise SmpLookupError(f"invalid SMP URL {url!r}", Problem.NOT_REGISTERED) from e
        if target.scheme not in ("http", "https") or not target.host:
            raise SmpLookupError(f"invalid SMP URL {url!r}", Problem.NOT_REGISTERED)
        if plain_http_refused(target, allow_http=self._allow_http):
            raise SmpLookupError(
                f"the SMP URL {url!r} is plain http; SMPs are reached over https",
                Problem.INSECURE,
            )
        cached = self.cache.get(url, self._now())
        if cached is not None:
            return cached
        headers: CIMultiDict[str] = CIMultiDict()
        body = await self._get(target, url, environment, headers)
        self.cache.put(url, body, headers, self._now())
        return body

    async def _get(
        self, target: URL, url: str, environment: Environment, answer_headers: CIMultiDict[str]
    ) -> bytes:
        if self._session is None or self._session.closed:
            self._session = self._session_factory()
        try:
            async with self._session.get(
                target,
                headers={"Accept": "text/xml, application/xml"},
                timeout=aiohttp.ClientTimeout(total=self._timeout),
                allow_redirects=False,  # a redirect could lead off https; SMPs answer directly
            ) as response:
                status = response.status
                answer_headers.update(response.headers)
                if status in (404, 410):
                    raise SmpLookupError(
                        f"receiver not registered in {environment.value}: the SMP answered "
                        f"HTTP {status}",
                        Problem.NOT_REGISTERED,
                    )
                if status != 200:
                    transient = status >= 500 or status in _RETRYABLE_4XX
                    raise SmpLookupError(
                        f"the SMP answered HTTP {status}"
                        + (" (HTTP redirects are not followed)" if status < 400 else ""),
                        Problem.UNREACHABLE if transient else Problem.NOT_REGISTERED,
                    )
                return await read_capped(response, MAX_DOCUMENT_BYTES)
        except AnswerTooLarge as e:
            raise SmpLookupError(
                f"the SMP answer is too large: {e}", Problem.SMP_UNTRUSTED
            ) from None
        except aiohttp.InvalidURL as e:
            raise SmpLookupError(f"invalid SMP URL {url!r}", Problem.NOT_REGISTERED) from e
        except (aiohttp.ClientError, TimeoutError, OSError) as e:
            raise SmpLookupError(f"the SMP cannot be reached: {e!r}", Problem.UNREACHABLE) from e

    def __repr__(self) -> str:
        return f"SmpLookupClient(discovery={self._discovery!r})"
