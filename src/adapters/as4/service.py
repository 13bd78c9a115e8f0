"""The AS4 message layer behind the service's ports: ``ApTransport`` (sending over HTTP) and
``MessageReader`` (the receiving side). Heavy cryptography runs in worker threads.

The reader takes a small message in memory, a large one from a file (memory-mapped), and
writes the SBD as it is decompressed to memory up to ``IN_MEMORY`` bytes, to a file beyond
(``Spill``), so a large one is never held whole in memory. The transport
reads at most ``MAX_ANSWER_BYTES`` of a receiving access point's answer, and builds a message
of an SBD of at most ``INLINE_BUILD`` bytes on the event loop (a thread hop for it cost more
than the building), a larger one in a worker thread."""

from __future__ import annotations

import asyncio
import functools
import mmap
import os
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import BinaryIO, Self

import aiohttp
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from fourcorner.adapters.answer import AnswerTooLarge, read_capped, read_head
from fourcorner.adapters.as4 import kept as kept_message
from fourcorner.adapters.as4.errors import As4Error
from fourcorner.adapters.as4.messages import (
    CertificateCheck,
    build_user_message,
    common_name,
    read_user_message,
)
from fourcorner.adapters.as4.model import ErrorSignal
from fourcorner.adapters.as4.signals import build_error, build_receipt, read_signal
from fourcorner.adapters.retry_after import BUSY, asked_wait
from fourcorner.application.ports import (
    As4Refusal,
    Credentials,
    Delivered,
    Endpoint,
    InboundDocument,
    Prepared,
    Refused,
)
from fourcorner.domain.envelope import Addressing, Identifier
from fourcorner.domain.network_services import Environment

NOT_SERVICED = "PEPPOL:NOT_SERVICED"
# A receipt or an error signal is a few kilobytes; a larger answer is refused unread.
MAX_ANSWER_BYTES = 4 * 1024 * 1024
ERROR_DETAIL_BYTES = 300  # what is kept of a non-200 answer
IN_MEMORY = 256 * 1024  # a received SBD of at most this many bytes is held in memory
INLINE_BUILD = 256 * 1024  # the message of an SBD of at most this many bytes is built inline


@lru_cache(maxsize=64)
def _signer(cert_pem: str, key_pem: str) -> tuple[rsa.RSAPrivateKey, x509.Certificate]:
    key = serialization.load_pem_private_key(key_pem.encode(), password=None)
    if not isinstance(key, rsa.RSAPrivateKey):
        raise ValueError("an access point key is an RSA key")
    return key, x509.load_pem_x509_certificate(cert_pem.encode())


@lru_cache(maxsize=64)
def _own_party(cert_pem: str) -> str:
    """The CN of an access point's own certificate (its party name), read once."""
    return common_name(x509.load_pem_x509_certificate(cert_pem.encode())) or ""


@lru_cache(maxsize=64)
def _party(der: bytes) -> tuple[x509.Certificate, str]:
    """The certificate of ``der`` and its CN (a party's name), read once for the same bytes:
    every send to an endpoint reads the certificate its SMP publishes, and its answer's."""
    certificate = x509.load_der_x509_certificate(der)
    return certificate, common_name(certificate) or ""


def _now() -> datetime:
    return datetime.now(UTC)


class Spill:
    """Where a received SBD is written as it is decompressed: held in memory up to ``limit``
    bytes, then in the file ``make()`` makes (a large SBD is never held whole in memory)."""

    def __init__(self, make: Callable[[], Path], limit: int) -> None:
        self._make, self._limit = make, limit
        self._held: list[bytes] = []
        self._size = 0
        self._path: Path | None = None
        self._file: BinaryIO | None = None

    def write(self, data: bytes) -> int:
        if self._file is None:
            if self._size + len(data) <= self._limit:
                self._held.append(bytes(data))
                self._size += len(data)
                return len(data)
            self._path = self._make()
            self._file = self._path.open("wb")
            self._file.writelines(self._held)
            self._held.clear()
        return self._file.write(data)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._file is not None:
            self._file.close()

    def taken(self) -> bytes | Path:
        """What was written: its bytes, or the file holding it."""
        return self._path if self._path is not None else b"".join(self._held)


def _mapped(path: Path) -> bytes | mmap.mmap:
    """The file's content without reading it into memory: a read-only memory map (unmapped
    once the last view of it is gone), or empty bytes for an empty file."""
    with path.open("rb") as file:
        if os.fstat(file.fileno()).st_size == 0:
            return b""
        return mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)


class As4MessageReader:
    """``check_certificate`` decides whether a sender's certificate is trusted; for an access
    point of an environment in ``environment_checks`` (its ``Credentials.environment``), that
    environment's check decides instead: a sender's certificate must come from the AP CA of
    the receiving access point's environment, so a PROD access point's message is refused at
    a TEST access point (``EBMS:0101``) and the reverse."""

    def __init__(
        self,
        check_certificate: CertificateCheck,
        *,
        max_payload: int,
        clock: Callable[[], datetime] = _now,
        environment_checks: Mapping[Environment, CertificateCheck] | None = None,
    ) -> None:
        self._check = check_certificate
        self._by_environment = dict(environment_checks or {})
        self._max = max_payload
        self._clock = clock

    def _check_for(self, credentials: Credentials) -> CertificateCheck:
        if credentials.environment is None:
            return self._check
        return self._by_environment.get(credentials.environment, self._check)

    def read(
        self,
        content_type: str,
        body: bytes | Path,
        credentials: Credentials,
        sbd: Callable[[], Path],
    ) -> InboundDocument:
        key, cert = _signer(credentials.cert_pem, credentials.key_pem)
        out = Spill(sbd, IN_MEMORY)
        try:
            with out:
                m = read_user_message(
                    content_type,
                    body if isinstance(body, bytes) else _mapped(body),
                    receiver_key=key,
                    receiver_certificate=cert,
                    check_certificate=self._check_for(credentials),
                    max_payload=self._max,
                    now=self._clock(),
                    payload_to=out,
                )
        except As4Error as e:
            raise As4Refusal(e.code, e.short_description, e.detail, e.ref_to_message_id) from None
        return InboundDocument(
            message_id=m.message_id,
            sbd=out.taken(),
            original_sender=Identifier(*m.original_sender),
            final_recipient=Identifier(*m.final_recipient),
            service=Identifier(m.service_type, m.service),
            action=m.action,
            sender_certificate_cn=common_name(m.sender_certificate) or "",
            opaque=m,
        )

    def receipt(self, inbound: InboundDocument, credentials: Credentials) -> bytes:
        key, cert = _signer(credentials.cert_pem, credentials.key_pem)
        return build_receipt(
            inbound.opaque,
            key=key,
            certificate=cert,
            message_id=f"{uuid.uuid4()}@fourcorner",
            timestamp=self._clock(),
        )

    def error(self, refusal: As4Refusal, credentials: Credentials) -> bytes:
        key, cert = _signer(credentials.cert_pem, credentials.key_pem)
        error = As4Error(refusal.code, refusal.description, refusal.detail, refusal.ref)
        return build_error(
            ref_to_message_id=refusal.ref,
            error=error,
            key=key,
            certificate=cert,
            message_id=f"{uuid.uuid4()}@fourcorner",
            timestamp=self._clock(),
        )


class As4Transport:
    """POSTs user messages to receiving access points and checks their signed answers."""

    def __init__(self, *, timeout: float = 60.0, clock: Callable[[], datetime] = _now) -> None:
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._clock = clock
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        return self._session

    async def prepare(
        self,
        *,
        sbd: bytes,
        addressing: Addressing,
        endpoint: Endpoint,
        credentials: Credentials,
        message_id: str,
        kept: bytes | None = None,
    ) -> Prepared:
        """The kept message when it was built with ``message_id`` for this endpoint's
        certificate (a retry posts the same bytes, see ``kept``), else a new one."""
        found = kept_message.load(kept) if kept is not None else None
        if (
            kept is not None
            and found is not None
            and found.message.message_id == message_id
            and found.receiver_certificate == endpoint.certificate_der
        ):
            return Prepared(kept, found.sender_party, found.receiver_party, True, found)
        key, cert = _signer(credentials.cert_pem, credentials.key_pem)
        receiver, to_party = _party(endpoint.certificate_der)
        from_party = _own_party(credentials.cert_pem)
        message = functools.partial(
            build_user_message,
            payload=sbd,
            message_id=message_id,
            conversation_id=message_id.split("@", 1)[0],
            timestamp=self._clock(),
            from_party=from_party,
            to_party=to_party,
            service=addressing.process.value,
            service_type=addressing.process.scheme,
            action=str(addressing.document_type),
            original_sender=(addressing.sender.scheme, addressing.sender.value),
            final_recipient=(addressing.receiver.scheme, addressing.receiver.value),
            sender_key=key,
            sender_certificate=cert,
            receiver_certificate=receiver,
        )

        def build() -> tuple[kept_message.KeptMessage, bytes]:
            built = kept_message.KeptMessage(
                message(), endpoint.certificate_der, from_party, to_party
            )
            return built, kept_message.dump(built)

        built, data = build() if len(sbd) <= INLINE_BUILD else await asyncio.to_thread(build)
        return Prepared(data, built.sender_party, built.receiver_party, False, built)

    async def send(self, prepared: Prepared, endpoint: Endpoint) -> Delivered | Refused:
        """POST a prepared message to ``endpoint.url`` and check the answer against it."""
        built = prepared.opaque
        if not isinstance(built, kept_message.KeptMessage):
            built = kept_message.load(prepared.data)
        if built is None:
            return Refused("prepared", "not a message this transport prepared", retryable=False)
        message, message_id = built.message, built.message.message_id
        receiver = _party(built.receiver_certificate)[0]
        try:
            async with self._client().post(
                endpoint.url,
                data=message.body,
                headers=message.http_headers,
                allow_redirects=False,  # the signed endpoint is the one checked (https)
            ) as resp:
                status, content_type = resp.status, resp.headers.get("Content-Type", "")
                if 300 <= status < 400:
                    return Refused(
                        f"HTTP {status}",
                        f"the access point answered with a redirect (HTTP {status}), which "
                        "is not followed",
                        retryable=False,
                    )
                if status != 200:
                    head = await read_head(resp, ERROR_DETAIL_BYTES)
                    busy = status in BUSY
                    asked = resp.headers.get("Retry-After") if busy else None
                    return Refused(
                        f"HTTP {status}",
                        head.decode(errors="replace"),
                        retryable=status >= 500 or status == 429,
                        busy=busy,
                        retry_after=asked_wait(asked, self._clock()),
                    )
                answer = await read_capped(resp, MAX_ANSWER_BYTES)
        except AnswerTooLarge as e:
            return Refused("answer too large", str(e), retryable=False, bad_receipt=True)
        except (aiohttp.ClientError, OSError, TimeoutError) as e:
            return Refused(f"connection: {type(e).__name__}", str(e)[:300], retryable=True)
        try:
            signal = read_signal(
                content_type, answer, sent=message, receiver_certificate=receiver, now=self._clock()
            )
        except As4Error as e:
            return Refused(e.code, e.detail, retryable=False, bad_receipt=True)
        if isinstance(signal, ErrorSignal):
            return Refused(
                signal.code,
                f"{signal.description} {signal.detail}".strip(),
                retryable=False,
                not_serviced=signal.detail == NOT_SERVICED,
            )
        return Delivered(receipt=answer, message_id=message_id)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
