"""Access points in one process: the AP transport and the message reader of a loopback.

``InMemoryApTransport`` hands a prepared message to the receiving access point attached to
the endpoint's URL in a ``LoopbackNetwork`` (whatever takes a message in there: in the
service, the receiving use case) and reads its answer; ``InMemoryMessageReader`` is the
receiving side's reader of those messages. Together they stand in for the AS4 profile where
no HTTP, signature or encryption is wanted (embedders, the test harness): the message is
addressed to the receiving certificate's CN and refused by any other access point, the
receipt names the message and the digest of the document it acknowledges and is checked
against both, and a refusal comes back as an error signal with its EBMS code, as AS4 answers.

Nothing is signed: the loopback proves nothing about who sent a message, so it joins access
points of one process only and is never a network transport. Both adapters keep what they
were given (``sent``, ``read``, ``receipts``, ``errors``) for tests to assert on.

The wire form, ``application/x-fourcorner-loopback``: one line of JSON (the message's
ebMS-like header) and the SBD's bytes after it, unchanged. Answers are one JSON object.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

import attrs
from cryptography import x509
from cryptography.x509.oid import NameOID

from fourcorner.application.ports import (
    ApTransport,
    As4Refusal,
    Credentials,
    Delivered,
    Endpoint,
    InboundDocument,
    Prepared,
    Refused,
)
from fourcorner.domain.envelope import Addressing, Identifier
from fourcorner.domain.text import quoted

CONTENT_TYPE = "application/x-fourcorner-loopback"
SIGNAL_TYPE = "application/json"
NOT_SERVICED = "PEPPOL:NOT_SERVICED"


class Answered(Protocol):
    """What a receiving access point answers: an HTTP-like status and a signal."""

    @property
    def status(self) -> int: ...

    @property
    def content_type(self) -> str: ...

    @property
    def body(self) -> bytes: ...


# Takes one message (its content type and the file holding it) in, and answers it.
Inbox = Callable[[str, Path], Awaitable[Answered]]


class LoopbackNetwork:
    """The receiving access points of one process, by the URL their endpoints publish."""

    def __init__(self) -> None:
        self._inboxes: dict[str, Inbox] = {}

    def attach(self, url: str, inbox: Inbox) -> None:
        self._inboxes[url] = inbox

    def detach(self, url: str) -> None:
        self._inboxes.pop(url, None)

    def inbox(self, url: str) -> Inbox | None:
        return self._inboxes.get(url)


@attrs.frozen
class Header:
    """The header of a loopback message: the parts of the ebMS user message the receiving
    use case reads, and the parties' seat ids."""

    message_id: str
    from_party: str  # the sending certificate's CN
    to_party: str  # the receiving certificate's CN
    receiver_certificate_sha256: str  # of the endpoint's certificate (DER), hex
    original_sender: tuple[str, str]
    final_recipient: tuple[str, str]
    service: tuple[str, str]  # the process: (scheme, value)
    action: str  # "<doc scheme>::<doc value>"
    payload_sha256: str

    def dump(self, payload: bytes) -> bytes:
        return json.dumps(attrs.asdict(self), separators=(",", ":")).encode() + b"\n" + payload

    @classmethod
    def load(cls, data: bytes) -> tuple[Header, bytes]:
        """The header and the payload of a message; ``ValueError`` when it is not one."""
        line, newline, payload = data.partition(b"\n")
        if not newline:
            raise ValueError("no header line")
        try:
            fields = json.loads(line)
            header = cls(
                message_id=str(fields["message_id"]),
                from_party=str(fields["from_party"]),
                to_party=str(fields["to_party"]),
                receiver_certificate_sha256=str(fields["receiver_certificate_sha256"]),
                original_sender=_pair(fields["original_sender"]),
                final_recipient=_pair(fields["final_recipient"]),
                service=_pair(fields["service"]),
                action=str(fields["action"]),
                payload_sha256=str(fields["payload_sha256"]),
            )
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"the header does not read: {e}") from None
        if hashlib.sha256(payload).hexdigest() != header.payload_sha256:
            raise ValueError("the payload is not the one the header names")
        return header, payload


def _pair(value: Any) -> tuple[str, str]:
    scheme, text = value
    return str(scheme), str(text)


def _cn(certificate: x509.Certificate) -> str:
    found = certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(found[0].value) if found else ""


def pem_common_name(cert_pem: str) -> str:
    """The CN of a PEM certificate: an access point certificate's seat id."""
    return _cn(x509.load_pem_x509_certificate(cert_pem.encode()))


def der_common_name(certificate_der: bytes) -> str:
    return _cn(x509.load_der_x509_certificate(certificate_der))


@attrs.frozen
class Sent:
    """One message handed to a receiving access point, and what came of it."""

    prepared: Prepared
    endpoint: Endpoint
    outcome: Delivered | Refused


class InMemoryApTransport:
    """Sends prepared messages to the access points of a ``LoopbackNetwork``.

    A URL with nothing attached (or ``cut``) fails as a connection would, to be retried.
    """

    def __init__(self, network: LoopbackNetwork, *, spool: Path | None = None) -> None:
        self.network = network
        self._spool = spool  # where messages are written for the inbox; the system's temp
        self.sent: list[Sent] = []
        self._cut: set[str] = set()

    def cut(self, url: str) -> None:
        """Sends to ``url`` fail as an unreachable access point's do, until ``mend``."""
        self._cut.add(url)

    def mend(self, url: str) -> None:
        self._cut.discard(url)

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
        receiver_sha256 = hashlib.sha256(endpoint.certificate_der).hexdigest()
        if kept is not None:
            with contextlib.suppress(ValueError):
                header, _ = Header.load(kept)
                if (
                    header.message_id == message_id
                    and header.receiver_certificate_sha256 == receiver_sha256
                ):
                    return Prepared(kept, header.from_party, header.to_party, True, header)
        header = Header(
            message_id=message_id,
            from_party=pem_common_name(credentials.cert_pem),
            to_party=endpoint.common_name or der_common_name(endpoint.certificate_der),
            receiver_certificate_sha256=receiver_sha256,
            original_sender=(addressing.sender.scheme, addressing.sender.value),
            final_recipient=(addressing.receiver.scheme, addressing.receiver.value),
            service=(addressing.process.scheme, addressing.process.value),
            action=str(addressing.document_type),
            payload_sha256=hashlib.sha256(sbd).hexdigest(),
        )
        return Prepared(header.dump(sbd), header.from_party, header.to_party, False, header)

    async def send(self, prepared: Prepared, endpoint: Endpoint) -> Delivered | Refused:
        outcome = await self._send(prepared, endpoint)
        self.sent.append(Sent(prepared, endpoint, outcome))
        return outcome

    async def _send(self, prepared: Prepared, endpoint: Endpoint) -> Delivered | Refused:
        try:
            header, _ = Header.load(prepared.data)
        except ValueError:
            return Refused("prepared", "not a message this transport prepared", retryable=False)
        inbox = self.network.inbox(endpoint.url)
        if inbox is None or endpoint.url in self._cut:
            why = f"no access point answers at {endpoint.url}"
            return Refused("connection: ConnectionRefusedError", why, retryable=True)
        path = await asyncio.to_thread(_spooled, prepared.data, self._spool)
        try:
            answer = await inbox(CONTENT_TYPE, path)
        finally:
            path.unlink(missing_ok=True)
        if answer.status != 200:
            return Refused(
                f"HTTP {answer.status}",
                answer.body[:1024].decode(errors="replace"),
                retryable=answer.status >= 500 or answer.status == 429,
            )
        return _signal(answer.body, header)

    async def aclose(self) -> None:
        """Nothing to close; here so the container may manage it as it does the AS4 one."""


# the container wires adapters untyped: this has mypy hold the class to the port it stands for
_AS_PORT: type[ApTransport] = InMemoryApTransport


def _spooled(data: bytes, folder: Path | None) -> Path:
    """A new file holding ``data``, as a receiving route spools a request body."""
    fd, name = tempfile.mkstemp(prefix="loopback-", dir=folder)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    return Path(name)


def _signal(body: bytes, sent: Header) -> Delivered | Refused:
    """The receiving access point's answer to ``sent``: a receipt that acknowledges it, or
    its error signal."""
    try:
        signal = json.loads(body)
        kind, by, ref = signal["signal"], signal["by"], signal["refToMessageId"]
    except (KeyError, TypeError, ValueError):
        return Refused("EBMS:0004", "the answer is not a signal", False, bad_receipt=True)
    if by != sent.to_party:
        why = f"the answer is from {by!r}, not from {sent.to_party!r}"
        return Refused("EBMS:0101", why, retryable=False, bad_receipt=True)
    if kind == "error":
        detail = str(signal.get("detail", ""))
        return Refused(
            str(signal.get("code", "")),
            f"{signal.get('description', '')} {detail}".strip(),
            retryable=False,
            not_serviced=detail == NOT_SERVICED,
        )
    if kind != "receipt" or ref != sent.message_id:
        why = f"the receipt is for {ref!r}, not for {sent.message_id!r}"
        return Refused("EBMS:0302", why, retryable=False, bad_receipt=True)
    if signal.get("payloadSha256") != sent.payload_sha256:
        why = "the receipt acknowledges another document"
        return Refused("EBMS:0302", why, retryable=False, bad_receipt=True)
    return Delivered(receipt=body, message_id=sent.message_id)


class InMemoryMessageReader:
    """Reads the messages of ``InMemoryApTransport`` for the receiving use case, and writes
    its receipts and error signals."""

    def __init__(self) -> None:
        self.read_messages: list[InboundDocument] = []
        self.receipts: list[InboundDocument] = []
        self.errors: list[As4Refusal] = []

    def read(
        self,
        content_type: str,
        body: bytes | Path,
        credentials: Credentials,
        sbd: Callable[[], Path],
    ) -> InboundDocument:
        if content_type.split(";", 1)[0].strip().lower() != CONTENT_TYPE:
            raise As4Refusal("EBMS:0009", "InvalidHeader", f"not {CONTENT_TYPE}: {content_type}")
        try:
            header, payload = Header.load(body if isinstance(body, bytes) else body.read_bytes())
        except ValueError as e:
            raise As4Refusal("EBMS:0009", "InvalidHeader", str(e)) from None
        own = pem_common_name(credentials.cert_pem)
        if header.to_party != own:
            raise As4Refusal(
                "EBMS:0102",
                "FailedDecryption",
                f"the message is for {quoted(header.to_party)}, this access point is {own!r}",
                header.message_id,
            )
        inbound = InboundDocument(
            message_id=header.message_id,
            sbd=payload,  # held in memory, whatever its size
            original_sender=Identifier(*header.original_sender),
            final_recipient=Identifier(*header.final_recipient),
            service=Identifier(*header.service),
            action=header.action,
            sender_certificate_cn=header.from_party,
            opaque=header,
        )
        self.read_messages.append(inbound)
        return inbound

    def receipt(self, inbound: InboundDocument, credentials: Credentials) -> bytes:
        header: Header = inbound.opaque
        self.receipts.append(inbound)
        return _json(
            {
                "signal": "receipt",
                "by": pem_common_name(credentials.cert_pem),
                "refToMessageId": inbound.message_id,
                "payloadSha256": header.payload_sha256,
            }
        )

    def error(self, refusal: As4Refusal, credentials: Credentials) -> bytes:
        self.errors.append(refusal)
        return _json(
            {
                "signal": "error",
                "by": pem_common_name(credentials.cert_pem),
                "refToMessageId": refusal.ref,
                "code": refusal.code,
                "description": refusal.description,
                "detail": refusal.detail,
            }
        )


def _json(value: dict[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()
