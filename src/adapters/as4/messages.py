"""UserMessages: ``build_user_message`` for the sending access point (corner 2) and
``read_user_message`` for the receiving one (corner 3), in NETWORK.md §4's order of
operations.

Sender: SBD → gzip → sign (Messaging, Body and the gzip bytes) → encrypt the attachment.
Receiver: MIME → hardened XML → ebMS header → signature and its coverage → the signer's
certificate → unwrap the key → decrypt, digest and gunzip under a cap, in one streaming pass
(the payload can go straight to a file, or anything written to).

Duplicate detection is the caller's business: reading the same message twice gives the same
result twice, and the caller keeps the MessageIds (and SBDH InstanceIdentifiers) it has
delivered and answers a replay without delivering it again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import datetime
from typing import Protocol

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from lxml import etree

from fourcorner.adapters.as4 import compression, ebms, encryption, signature
from fourcorner.adapters.as4.constants import PARTY_TYPE, USER_NSMAP
from fourcorner.adapters.as4.envelope import (
    RECEIVER_TOKEN_ID,
    SIGNER_TOKEN_ID,
    SoapEnvelope,
    new_envelope,
    parse_envelope,
)
from fourcorner.adapters.as4.errors import (
    FAILED_AUTHENTICATION,
    MIME_INCONSISTENCY,
    POLICY_NONCOMPLIANCE,
    VALUE_INCONSISTENT,
    As4Error,
)
from fourcorner.adapters.as4.mime import Body, build_related, read_related
from fourcorner.adapters.as4.model import InboundMessage, OutboundMessage
from fourcorner.adapters.as4.xml import index_ids, serialise
from fourcorner.domain.clock import utc

CertificateCheck = Callable[[x509.Certificate], None]
"""Raises ``ValueError`` (``ChainError`` is one) or ``As4Error`` to refuse a certificate."""


def content_id_for(message_id: str) -> str:
    """The payload's Content-ID: derived from the MessageId, so a retry names it the same."""
    return f"sbd-{hashlib.sha256(message_id.encode('utf-8')).hexdigest()[:32]}@fourcorner"


def build_user_message(
    *,
    payload: bytes,
    message_id: str,
    conversation_id: str,
    timestamp: datetime,
    from_party: str,
    to_party: str,
    service: str,
    service_type: str,
    action: str,
    original_sender: tuple[str, str],
    final_recipient: tuple[str, str],
    sender_key: rsa.RSAPrivateKey,
    sender_certificate: x509.Certificate,
    receiver_certificate: x509.Certificate,
) -> OutboundMessage:
    """The signed and encrypted UserMessage carrying ``payload`` (the SBD) to the access point
    whose certificate (from the SMP) is ``receiver_certificate``. ``from_party`` and
    ``to_party`` are the two certificates' CNs; ``action`` is ``<doc scheme>::<doc value>``;
    ``original_sender`` and ``final_recipient`` are ``(scheme, value)``."""
    values = {
        "message_id": message_id,
        "conversation_id": conversation_id,
        "from_party": from_party,
        "to_party": to_party,
        "service": service,
        "service_type": service_type,
        "action": action,
        "original_sender": original_sender[0],
        "original_sender value": original_sender[1],
        "final_recipient": final_recipient[0],
        "final_recipient value": final_recipient[1],
    }
    for name, value in values.items():
        if not value or value != value.strip() or any(c in value for c in "<>\r\n"):
            raise ValueError(f"{name} {value!r} is empty or holds blanks or <, >")
    cid = content_id_for(message_id)
    compressed = compression.compress(payload)
    envelope = new_envelope(USER_NSMAP)
    signature.append_token(envelope.security, RECEIVER_TOKEN_ID, receiver_certificate)
    encrypted = encryption.encrypt_attachment(
        envelope.security,
        content=compressed,
        cid=cid,
        receiver_certificate=receiver_certificate,
        receiver_token_id=RECEIVER_TOKEN_ID,
    )
    signature.append_token(envelope.security, SIGNER_TOKEN_ID, sender_certificate)
    ebms.append_user_message(
        envelope.messaging,
        message_id=message_id,
        timestamp=timestamp,
        from_party=from_party,
        to_party=to_party,
        service=service,
        service_type=service_type,
        action=action,
        conversation_id=conversation_id,
        original_sender=original_sender,
        final_recipient=final_recipient,
        payload_cid=cid,
    )
    references = (
        signature.element_reference(envelope.messaging),
        signature.element_reference(envelope.body),
        signature.attachment_reference(cid, compressed),
    )
    signature.append_signature(envelope.security, references, sender_key, SIGNER_TOKEN_ID)
    content_type, body = build_related(serialise(envelope.root), [(cid, encrypted)])
    return OutboundMessage(content_type, body, message_id, references)


class Writer(Protocol):
    """Where a payload is written as it is decompressed: an open binary file, or anything
    else with ``write``."""

    def write(self, data: bytes, /) -> object: ...


def read_user_message(
    content_type: str,
    body: Body,
    *,
    receiver_key: rsa.RSAPrivateKey,
    receiver_certificate: x509.Certificate,
    check_certificate: CertificateCheck,
    max_payload: int,
    now: datetime,
    payload_to: Writer | None = None,
) -> InboundMessage:
    """The verified, decrypted and decompressed UserMessage in an HTTP request's
    ``content_type`` and ``body`` (bytes, or a memory-mapped file); every refusal is an
    ``As4Error`` carrying the MessageId once it could be read.

    ``check_certificate`` decides whether the signer's certificate is trusted (its chain to
    the network's AP CA, revocation); this function also refuses it outside its validity
    window at ``now`` and unless its CN is the From PartyId. ``max_payload`` caps the
    decompressed SBD in bytes.

    With ``payload_to``, the SBD is written there as it is decompressed instead of being
    returned (``payload`` is then empty), so a large document is never held whole in memory;
    after a refusal, what was written is to be thrown away.
    """
    soap, attachments = read_related(content_type, body)
    envelope = parse_envelope(soap)
    message_id = ebms.peek_message_id(envelope.messaging)
    try:
        return _read(
            envelope,
            attachments,
            receiver_key=receiver_key,
            receiver_certificate=receiver_certificate,
            check_certificate=check_certificate,
            max_payload=max_payload,
            now=now,
            payload_to=payload_to,
        )
    except As4Error as e:
        if e.ref_to_message_id is None:
            e.ref_to_message_id = message_id
        raise


def _read(
    envelope: SoapEnvelope,
    attachments: dict[str, memoryview],
    *,
    receiver_key: rsa.RSAPrivateKey,
    receiver_certificate: x509.Certificate,
    check_certificate: CertificateCheck,
    max_payload: int,
    now: datetime,
    payload_to: Writer | None,
) -> InboundMessage:
    header = ebms.read_user_message(envelope.messaging)
    if set(attachments) != {header.payload_cid}:
        raise As4Error.of(MIME_INCONSISTENCY, "the attachments are not exactly the payload")
    ids = index_ids(envelope.root)
    verified = signature.verify(envelope.security, ids)
    for element, name in ((envelope.messaging, "eb:Messaging"), (envelope.body, "the Body")):
        if not verified.covers(element):
            raise As4Error.of(FAILED_AUTHENTICATION, f"the signature does not cover {name}")
    if header.payload_cid not in verified.attachment_digests:
        raise As4Error.of(FAILED_AUTHENTICATION, "the signature does not cover the payload")
    _check_signer(verified.certificate, header.from_party, check_certificate, now)
    if header.from_type != PARTY_TYPE or header.to_type != PARTY_TYPE:
        raise As4Error.of(VALUE_INCONSISTENT, f"both PartyIds must have the type {PARTY_TYPE}")
    if header.to_party != common_name(receiver_certificate):
        raise As4Error.of(VALUE_INCONSISTENT, "the To PartyId is not this access point")
    keys = encryption.attachment_keys(
        envelope.security,
        ids,
        attachments,
        receiver_key=receiver_key,
        receiver_certificate=receiver_certificate,
    )
    key = keys.get(header.payload_cid)
    if key is None:
        raise As4Error.of(POLICY_NONCOMPLIANCE, "the payload is not encrypted")
    chunks: list[bytes] = []
    sink = chunks.append if payload_to is None else payload_to.write
    _open_payload(
        verified, header.payload_cid, key, attachments[header.payload_cid], max_payload, sink
    )
    payload = b"".join(chunks)
    return InboundMessage(
        message_id=header.message_id,
        conversation_id=header.conversation_id,
        timestamp=header.timestamp,
        from_party=header.from_party,
        to_party=header.to_party,
        service=header.service,
        service_type=header.service_type,
        action=header.action,
        original_sender=header.original_sender,
        final_recipient=header.final_recipient,
        sender_certificate=verified.certificate,
        payload=payload,
        signature_references=tuple(etree.tostring(e) for e in verified.reference_elements),
    )


def _open_payload(
    verified: signature.VerifiedSignature,
    cid: str,
    key: bytes,
    encrypted: memoryview,
    max_payload: int,
    sink: Callable[[bytes], object],
) -> None:
    """Decrypt the payload, check its signed digest and gunzip it in one pass, a piece at a
    time; the failures keep their order (decryption ``EBMS:0102``, then the digest
    ``EBMS:0101``, then decompression ``EBMS:0303``), so a tampered payload is reported as
    tampered, not as bad gzip."""
    digest = hashlib.sha256()
    inflater = compression.Inflater(max_payload, sink)
    inflating: list[As4Error] = []

    def take(compressed: bytes) -> None:
        digest.update(compressed)
        if not inflating:
            try:
                inflater.feed(compressed)
            except As4Error as e:
                inflating.append(e)

    encryption.decrypt(key, encrypted, take)
    signature.check_attachment(verified, cid, digest.digest())
    if inflating:
        raise inflating[0]
    inflater.close()


def common_name(certificate: x509.Certificate) -> str | None:
    """The certificate's only CN, or None."""
    try:
        names = certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    except ValueError:
        return None
    return str(names[0].value) if len(names) == 1 else None


def _check_signer(
    certificate: x509.Certificate, party: str, check: CertificateCheck, now: datetime
) -> None:
    moment = utc(now)
    if not certificate.not_valid_before_utc <= moment <= certificate.not_valid_after_utc:
        raise As4Error.of(FAILED_AUTHENTICATION, "the signing certificate is not valid now")
    try:
        check(certificate)
    except ValueError as e:
        raise As4Error.of(FAILED_AUTHENTICATION, f"the signing certificate is refused: {e}") from e
    if common_name(certificate) != party:
        raise As4Error.of(
            FAILED_AUTHENTICATION, "the signing certificate's CN is not the From PartyId"
        )
