"""The values the AS4 layer hands out: an outbound message ready to POST, an inbound message
once verified and decrypted, and the two answers a sender can get (a receipt or an error)."""

from __future__ import annotations

from datetime import datetime

import attrs
from cryptography import x509


@attrs.frozen(order=True)
class SignedReference:
    """One ``ds:Reference`` of a signature, as non-repudiation compares it: the URI, the
    transform algorithms in order, the digest algorithm and the digest (base64, no blanks)."""

    uri: str
    transforms: tuple[str, ...]
    digest_method: str
    digest_value: str


@attrs.frozen
class OutboundMessage:
    """A signed and encrypted UserMessage: POST ``body`` with ``http_headers``.

    ``references`` are the three signed references (Messaging, Body, payload) that the
    receipt's non-repudiation information must echo; keep them with the message to check the
    receipt (``read_signal``), also after a restart. Building again gives other bytes and other
    digests (the Timestamp is signed; the AES key and IV are random): a retry posts the message
    of the first attempt, kept as ``adapters.as4.kept`` stores it.
    """

    content_type: str
    body: bytes = attrs.field(repr=False)
    message_id: str
    references: tuple[SignedReference, ...]

    @property
    def http_headers(self) -> dict[str, str]:
        return {"Content-Type": self.content_type, "MIME-Version": "1.0"}


@attrs.frozen
class InboundMessage:
    """A UserMessage whose signature, certificate, encryption and compression all checked out.

    ``original_sender`` and ``final_recipient`` are ``(scheme, value)`` from the message
    properties; ``payload`` is the decompressed SBD. ``signature_references`` are the
    ``ds:Reference`` elements of the sender's signature, each serialised exactly as received,
    for the receipt's non-repudiation information (``build_receipt``).
    """

    message_id: str
    conversation_id: str
    timestamp: datetime
    from_party: str
    to_party: str
    service: str
    service_type: str
    action: str
    original_sender: tuple[str, str]
    final_recipient: tuple[str, str]
    sender_certificate: x509.Certificate = attrs.field(repr=False)
    payload: bytes = attrs.field(repr=False)
    signature_references: tuple[bytes, ...] = attrs.field(repr=False)


@attrs.frozen
class Receipt:
    """A signed non-repudiation receipt that matches what was sent."""

    message_id: str
    ref_to_message_id: str
    timestamp: datetime
    references: tuple[SignedReference, ...]


@attrs.frozen
class ErrorSignal:
    """A signed ebMS error answering a sent message (the first error of the signal, preferring
    one of severity ``failure``). ``detail`` is ``PEPPOL:NOT_SERVICED`` when the receiver does
    not serve the participant, document type or process."""

    code: str
    severity: str
    description: str
    detail: str
    short_description: str = ""
    ref_to_message_id: str | None = None
