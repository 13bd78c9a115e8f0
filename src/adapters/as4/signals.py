"""Signals: the receiving access point's signed answers (``build_receipt``, ``build_error``)
and the sending access point's check of the answer it got (``read_signal``).

A receipt is a non-repudiation receipt: ``eb:Receipt/ebbp:NonRepudiationInformation`` with one
``ebbp:MessagePartNRInformation`` per ``ds:Reference`` of the received signature, each copied
verbatim. Receipts and errors are signed like a user message, over their own Messaging and
Body, and sent as a bare ``application/soap+xml; charset=utf-8`` envelope.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import rsa

from fourcorner.adapters.as4 import ebms, signature
from fourcorner.adapters.as4.constants import DS, EB, EBBP, SIGNAL_NSMAP, XML, q
from fourcorner.adapters.as4.envelope import (
    SIGNER_TOKEN_ID,
    SoapEnvelope,
    new_envelope,
    parse_envelope,
)
from fourcorner.adapters.as4.errors import (
    FAILED_AUTHENTICATION,
    INVALID_HEADER,
    INVALID_RECEIPT,
    VALUE_INCONSISTENT,
    As4Error,
)
from fourcorner.adapters.as4.mime import soap_of
from fourcorner.adapters.as4.model import ErrorSignal, InboundMessage, OutboundMessage, Receipt
from fourcorner.adapters.as4.xml import (
    Element,
    attribute,
    children,
    index_ids,
    optional,
    parse_untrusted,
    serialise,
    sub,
    text,
)
from fourcorner.domain.clock import utc


def build_receipt(
    inbound: InboundMessage,
    *,
    key: rsa.RSAPrivateKey,
    certificate: x509.Certificate,
    message_id: str,
    timestamp: datetime,
) -> bytes:
    """The signed non-repudiation receipt for ``inbound`` (send with HTTP 200 and
    ``SIGNAL_CONTENT_TYPE``); ``certificate`` is the one the SMP publishes for this AP."""
    envelope = new_envelope(SIGNAL_NSMAP)
    signature.append_token(envelope.security, SIGNER_TOKEN_ID, certificate)
    signal = ebms.append_signal_info(
        envelope.messaging,
        message_id=message_id,
        timestamp=timestamp,
        ref_to_message_id=inbound.message_id,
    )
    information = sub(sub(signal, q(EB, "Receipt")), q(EBBP, "NonRepudiationInformation"))
    for raw in inbound.signature_references:
        part = sub(information, q(EBBP, "MessagePartNRInformation"))
        part.append(parse_untrusted(raw, "signature reference"))
    return _sign(envelope, key)


def build_error(
    *,
    ref_to_message_id: str | None,
    error: As4Error,
    key: rsa.RSAPrivateKey,
    certificate: x509.Certificate,
    message_id: str,
    timestamp: datetime,
) -> bytes:
    """The signed ebMS error signal for ``error`` (send with HTTP 200). Use
    ``As4Error.not_serviced()`` for a receiver, document type or process not served here."""
    envelope = new_envelope(SIGNAL_NSMAP)
    signature.append_token(envelope.security, SIGNER_TOKEN_ID, certificate)
    signal = ebms.append_signal_info(
        envelope.messaging,
        message_id=message_id,
        timestamp=timestamp,
        ref_to_message_id=ref_to_message_id,
    )
    attrib = {
        "category": error.category,
        "errorCode": error.code,
        "origin": "ebMS",
        "severity": error.severity,
        "shortDescription": error.short_description,
    }
    if ref_to_message_id is not None:
        attrib["refToMessageInError"] = ref_to_message_id
    element = sub(signal, q(EB, "Error"), None, attrib)
    sub(element, q(EB, "Description"), error.description, {q(XML, "lang"): "en"})
    sub(element, q(EB, "ErrorDetail"), error.detail)
    return _sign(envelope, key)


def _sign(envelope: SoapEnvelope, key: rsa.RSAPrivateKey) -> bytes:
    references = (
        signature.element_reference(envelope.messaging),
        signature.element_reference(envelope.body),
    )
    signature.append_signature(envelope.security, references, key, SIGNER_TOKEN_ID)
    return serialise(envelope.root)


def read_signal(
    content_type: str,
    body: bytes,
    *,
    sent: OutboundMessage,
    receiver_certificate: x509.Certificate,
    now: datetime,
) -> Receipt | ErrorSignal:
    """The answer to ``sent``: a ``Receipt`` only if it is signed with exactly
    ``receiver_certificate`` (the one the SMP published), refers to ``sent`` and
    acknowledges exactly its signed references; an ``ErrorSignal`` for a signed error.
    Anything else raises ``As4Error`` (``EBMS:0101`` for the signature, ``EBMS:0302`` for a
    receipt that does not match)."""
    envelope = parse_envelope(soap_of(content_type, body))
    header = ebms.read_signal(envelope.messaging)
    verified = signature.verify(envelope.security, index_ids(envelope.root), receiver_certificate)
    for element, name in ((envelope.messaging, "eb:Messaging"), (envelope.body, "the Body")):
        if not verified.covers(element):
            raise As4Error.of(FAILED_AUTHENTICATION, f"the signature does not cover {name}")
    if verified.attachment_digests:
        raise As4Error.of(FAILED_AUTHENTICATION, "a signal's signature cannot cover attachments")
    moment = utc(now)
    if (
        not receiver_certificate.not_valid_before_utc
        <= moment
        <= receiver_certificate.not_valid_after_utc
    ):
        raise As4Error.of(FAILED_AUTHENTICATION, "the signing certificate is not valid now")
    if header.errors:
        return _error_signal(header.errors, header.ref_to_message_id, sent)
    if header.receipt is None:
        raise As4Error.of(INVALID_HEADER, "the signal is neither a receipt nor an error")
    if header.ref_to_message_id != sent.message_id:
        raise As4Error.of(INVALID_RECEIPT, "the receipt refers to another message")
    information = optional(header.receipt, q(EBBP, "NonRepudiationInformation"), INVALID_RECEIPT)
    if information is None:
        raise As4Error.of(INVALID_RECEIPT, "the receipt has no NonRepudiationInformation")
    references = tuple(
        signature.read_reference(reference, INVALID_RECEIPT)
        for part in children(information, q(EBBP, "MessagePartNRInformation"))
        for reference in children(part, q(DS, "Reference"))
    )
    if Counter(references) != Counter(sent.references):
        raise As4Error.of(INVALID_RECEIPT, "the receipt does not acknowledge what was sent")
    return Receipt(header.message_id, sent.message_id, header.timestamp, references)


def _error_signal(
    errors: tuple[Element, ...], ref_to_message_id: str | None, sent: OutboundMessage
) -> ErrorSignal:
    failures = [e for e in errors if e.get("severity") == "failure"]
    error = (failures or list(errors))[0]
    ref = ref_to_message_id or error.get("refToMessageInError") or None
    if ref not in (None, sent.message_id):
        raise As4Error.of(VALUE_INCONSISTENT, "the error refers to another message")
    description = optional(error, q(EB, "Description"))
    detail = optional(error, q(EB, "ErrorDetail"))
    return ErrorSignal(
        code=attribute(error, "errorCode"),
        severity=attribute(error, "severity"),
        description="" if description is None else text(description),
        detail="" if detail is None else text(detail),
        short_description=error.get("shortDescription", ""),
        ref_to_message_id=ref,
    )
