"""Looks up a participant's endpoint in an SMP (SMP 1.x, signed ServiceMetadata) over aiohttp.

The answer counts only if it is signed (enveloped XML-DSig) by one of the pinned SMP
certificates, that certificate is currently valid, and the document names the participant
(case-insensitively) and the document type (exactly) that were asked for. A Redirect is
followed once; the target's signer must match the redirect's ``CertificateUID`` and must be
pinned as well. Every failure is an ``SmpLookupError`` whose ``permanent`` says whether asking
again later can help (network trouble, timeouts, 5xx) or not (404, bad signature, an answer
larger than ``MAX_DOCUMENT_BYTES``, nothing registered for that process or transport profile,
endpoint not active), and whose ``kind`` says what went wrong: the receiver is not registered
(``NOT_REGISTERED``: the SMP knows no such participant), is registered but not for this document
type, process or transport profile (``NOT_ACCEPTED``), the SMP could not be reached or answered
with an error (``UNREACHABLE``), or its answer cannot be verified or used (``UNTRUSTED``). A
missing document type is told from a missing participant by asking for the participant's
ServiceGroup, only when the document type's metadata is not found.
"""

from __future__ import annotations

import base64
import binascii
import inspect
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from urllib.parse import urlsplit

import aiohttp
import attrs
from cryptography import x509
from lxml import etree
from yarl import URL

from adapters.answer import AnswerTooLarge, read_capped
from adapters.smp.signature import SignatureError, verify_enveloped
from adapters.smp.xml import (
    MalformedDocument,
    ParsedEndpoint,
    ParsedMetadata,
    parse_untrusted,
    path_segment,
    read_signed_service_metadata,
    split_identifier,
)
from domain.clock import utc
from domain.smp import PARTICIPANT_SCHEME

DEFAULT_TRANSPORT_PROFILE = "peppol-transport-as4-v2_0"
MAX_DOCUMENT_BYTES = 1 << 20

# The JSON interface's ``net`` spellings, accepted on input (NETWORK.md, "The net alias").
_WIRE_ALIASES = {
    "net-transport-as4-v2_0": "peppol-transport-as4-v2_0",
    "net-doctype-wildcard": "peppol-doctype-wildcard",
}
_RETRYABLE_4XX = frozenset({408, 425, 429})

Clock = Callable[[], datetime]
SessionFactory = Callable[[], aiohttp.ClientSession]
BaseUrlFor = Callable[[str], str | Awaitable[str]]


NOT_REGISTERED = "not-registered"
NOT_ACCEPTED = "not-accepted"
UNREACHABLE = "unreachable"
UNTRUSTED = "untrusted"


class SmpLookupError(Exception):
    """The lookup failed; ``permanent`` is False only when retrying later may succeed; ``kind``
    is one of ``NOT_REGISTERED``, ``NOT_ACCEPTED``, ``UNREACHABLE``, ``UNTRUSTED``."""

    def __init__(self, reason: str, permanent: bool, kind: str = UNTRUSTED) -> None:
        super().__init__(reason)
        self.reason = reason
        self.permanent = permanent
        self.kind = kind

    def __repr__(self) -> str:
        return f"SmpLookupError({self.reason!r}, permanent={self.permanent}, kind={self.kind!r})"


@attrs.frozen
class LookupResult:
    url: str
    certificate: x509.Certificate  # the access point's certificate, as published
    transport_profile: str
    activation: datetime | None
    expiration: datetime | None
    technical_contact_url: str
    description: str
    smp_certificate: x509.Certificate  # the certificate that signed the answer


def _system_clock() -> datetime:
    return datetime.now(UTC)


def _wire(value: str) -> str:
    return _WIRE_ALIASES.get(value, value)


def _subject_forms(certificate: x509.Certificate) -> set[str]:
    """The signer's subject in both RDN orders, normalised (``CN=a,O=b`` / ``O=b,CN=a``)."""
    rdns = [rdn.rfc4514_string() for rdn in certificate.subject.rdns]
    return {_normalise_dn(",".join(reversed(rdns))), _normalise_dn(",".join(rdns))}


def _normalise_dn(text: str) -> str:
    return ",".join(part.strip() for part in text.split(",")).casefold()


class SmpLookupClient:
    """Finds the endpoint for (participant, document type, process, transport profile).

    ``base_url_for`` is the SMP base URL, or a callable giving it for the ``participant`` as
    passed to ``endpoint`` (it may be async, e.g. SML/NAPTR discovery; its exceptions
    propagate unchanged). The aiohttp session is created on first use from
    ``session_factory`` and owned by the client: ``aclose()`` closes it.
    """

    def __init__(
        self,
        base_url_for: BaseUrlFor | str,
        trusted_certificates: Sequence[x509.Certificate],
        *,
        session_factory: SessionFactory | None = None,
        timeout: float = 10.0,
        clock: Clock | None = None,
    ) -> None:
        if not trusted_certificates:
            raise ValueError("at least one trusted SMP certificate is needed")
        self._base_url_for = base_url_for
        self._trusted = tuple(trusted_certificates)
        self._timeout = timeout
        self._session_factory = session_factory or self._default_session
        self._session: aiohttp.ClientSession | None = None
        self._clock: Clock = clock or _system_clock

    def _default_session(self) -> aiohttp.ClientSession:
        return aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self._timeout))

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None and not session.closed:
            await session.close()

    def _now(self) -> datetime:
        return utc(self._clock())

    async def _base_url(self, participant: str) -> str:
        if isinstance(self._base_url_for, str):
            return self._base_url_for
        base = self._base_url_for(participant)
        if inspect.isawaitable(base):
            base = await base
        return base

    # --- the lookup ---------------------------------------------------------------------------

    async def endpoint(
        self,
        participant: str,
        document: tuple[str, str],
        process: tuple[str, str],
        transport_profile: str = DEFAULT_TRANSPORT_PROFILE,
    ) -> LookupResult:
        """The endpoint registered for ``participant`` (``0088:…`` or ``scheme::value``),
        ``document`` and ``process`` (``(scheme, value)`` pairs) with ``transport_profile``."""
        try:
            scheme, value = (
                split_identifier(participant)
                if "::" in participant
                else (PARTICIPANT_SCHEME, participant)
            )
        except ValueError as e:
            raise SmpLookupError(
                f"malformed participant identifier: {e}", True, NOT_REGISTERED
            ) from e
        wanted_participant = (scheme.strip().lower(), value.strip().lower())
        wanted_document = (_wire(document[0]), document[1])
        profile = _wire(transport_profile)

        base = (await self._base_url(participant)).rstrip("/")
        url = (
            f"{base}/{path_segment(*wanted_participant)}/services/{path_segment(*wanted_document)}"
        )
        try:
            answer = await self._fetch(url)
        except SmpLookupError as e:
            if e.kind == NOT_REGISTERED:  # the participant, or only this document type?
                await self._registered(f"{base}/{path_segment(*wanted_participant)}", e)
            raise
        metadata, signer = self._verified(answer)
        if metadata.redirect is not None:
            redirect = metadata.redirect
            metadata, signer = self._verified(await self._fetch(redirect.href))
            if metadata.redirect is not None:
                raise SmpLookupError(
                    "the SMP redirected twice; only one redirect is followed", True
                )
            if _normalise_dn(redirect.certificate_uid) not in _subject_forms(signer):
                raise SmpLookupError(
                    "the redirect target is signed by a certificate other than its "
                    f"CertificateUID {redirect.certificate_uid!r}",
                    True,
                )

        participant_found = metadata.participant or ("", "")
        if (participant_found[0].lower(), participant_found[1].lower()) != wanted_participant:
            raise SmpLookupError(
                f"the SMP answered for participant {'::'.join(participant_found)!r}", True
            )
        if metadata.document != wanted_document:
            raise SmpLookupError(
                f"the SMP answered for document type {'::'.join(metadata.document or ())!r}",
                True,
            )
        chosen = self._choose(metadata, (_wire(process[0]), process[1]), profile)
        return self._result(chosen, signer)

    def _choose(
        self, metadata: ParsedMetadata, process: tuple[str, str], profile: str
    ) -> ParsedEndpoint:
        processes = [p for p in metadata.processes if (p.scheme, p.value) == process]
        if not processes:
            raise SmpLookupError(
                f"process {'::'.join(process)!r} is not registered", True, NOT_ACCEPTED
            )
        candidates = [e for p in processes for e in p.endpoints if e.transport_profile == profile]
        if not candidates:
            raise SmpLookupError(
                f"no endpoint with transport profile {profile!r}", True, NOT_ACCEPTED
            )
        now = self._now()
        problem = ""
        for candidate in candidates:
            if candidate.activation is not None and now < candidate.activation:
                problem = problem or f"the endpoint is active only from {candidate.activation}"
            elif candidate.expiration is not None and now >= candidate.expiration:
                problem = problem or f"the endpoint expired at {candidate.expiration}"
            else:
                return candidate
        raise SmpLookupError(problem, True, NOT_ACCEPTED)

    def _result(self, endpoint: ParsedEndpoint, signer: x509.Certificate) -> LookupResult:
        parts = urlsplit(endpoint.address)
        if parts.scheme not in ("https", "http") or not parts.netloc:
            raise SmpLookupError(f"the endpoint address {endpoint.address!r} is not a URL", True)
        try:
            certificate = x509.load_der_x509_certificate(
                base64.b64decode(endpoint.certificate, validate=True)
            )
        except (binascii.Error, ValueError) as e:
            raise SmpLookupError("the endpoint certificate cannot be read", True) from e
        return LookupResult(
            url=endpoint.address,
            certificate=certificate,
            transport_profile=endpoint.transport_profile,
            activation=endpoint.activation,
            expiration=endpoint.expiration,
            technical_contact_url=endpoint.technical_contact_url,
            description=endpoint.description,
            smp_certificate=signer,
        )

    # --- fetching and verifying ---------------------------------------------------------------

    def _verified(self, data: bytes) -> tuple[ParsedMetadata, x509.Certificate]:
        try:
            root: etree._Element = parse_untrusted(data)
            signer = verify_enveloped(root, self._trusted)
            metadata = read_signed_service_metadata(root)
        except SignatureError as e:
            raise SmpLookupError(f"the SMP signature is refused: {e.reason}", True) from e
        except MalformedDocument as e:
            raise SmpLookupError(f"the SMP answer cannot be read: {e}", True) from e
        now = self._now()
        if not signer.not_valid_before_utc <= now <= signer.not_valid_after_utc:
            raise SmpLookupError("the SMP signing certificate is not valid now", True)
        return metadata, signer

    async def _fetch(self, url: str) -> bytes:
        try:
            target = URL(url, encoded=True)
        except ValueError as e:
            raise SmpLookupError(f"invalid SMP URL {url!r}", True) from e
        if target.scheme not in ("http", "https") or not target.host:
            raise SmpLookupError(f"invalid SMP URL {url!r}", True)
        if self._session is None or self._session.closed:
            self._session = self._session_factory()
        try:
            async with self._session.get(
                target,
                headers={"Accept": "text/xml, application/xml"},
                timeout=aiohttp.ClientTimeout(total=self._timeout),
            ) as response:
                status = response.status
                if status in (404, 410):
                    raise SmpLookupError(
                        "the participant or document type is not registered", True, NOT_REGISTERED
                    )
                if status != 200:
                    permanent = 400 <= status < 500 and status not in _RETRYABLE_4XX
                    raise SmpLookupError(f"the SMP answered HTTP {status}", permanent, UNREACHABLE)
                return await read_capped(response, MAX_DOCUMENT_BYTES)
        except AnswerTooLarge as e:
            raise SmpLookupError(f"the SMP answer is too large: {e}", True) from None
        except aiohttp.InvalidURL as e:
            raise SmpLookupError(f"invalid SMP URL {url!r}", True) from e
        except (aiohttp.ClientError, TimeoutError, OSError) as e:
            raise SmpLookupError(f"the SMP cannot be reached: {e!r}", False, UNREACHABLE) from e

    async def _registered(self, service_group: str, missing: SmpLookupError) -> None:
        """After the document type's metadata was not found (``missing``): raise that the
        participant is registered, but not for this document type (``NOT_ACCEPTED``), when
        its ServiceGroup exists; return when it does not (not registered at all)."""
        try:
            await self._fetch(service_group)
        except SmpLookupError as e:
            if e.kind == NOT_REGISTERED:
                return
            raise
        raise SmpLookupError(
            "the participant is registered, but not for this document type", True, NOT_ACCEPTED
        ) from missing

    def __repr__(self) -> str:
        base = self._base_url_for if isinstance(self._base_url_for, str) else "<discovery>"
        return f"SmpLookupClient(base_url_for={base!r})"
