"""Build Standard Business Documents for any suite: ``make_sbd()`` wraps one of the network's
published example invoices (``examples/bis-billing-3/`` in this repository) in a valid SBDH;
every part of the header can be set, and ``pad_to`` grows the document to about that many
bytes (10 KB, 1 MB, 50 MB for benchmarks) with XML comments inside the business document,
which neither change what it says nor the C14N a signature over it sees. ``make_as4_message()``
puts such a document in the signed and encrypted AS4 UserMessage an access point would send.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import rsa

from fourcorner.adapters.as4 import OutboundMessage, build_user_message
from fourcorner.adapters.pki.testpki import TestPki
from fourcorner.adapters.sbdh.writer import write_sbd
from fourcorner.domain.envelope import Identifier, MlsType, Sbdh

# the network's identifiers, public in the harness's strategies (re-exported for the suites)
from fourcorner.entrypoints.harness.strategies import (
    BILLING_CUSTOMIZATION as BILLING_CUSTOMIZATION,
)
from fourcorner.entrypoints.harness.strategies import BILLING_PROCESS as BILLING_PROCESS
from fourcorner.entrypoints.harness.strategies import CREDIT_NOTE as CREDIT_NOTE
from fourcorner.entrypoints.harness.strategies import DOCUMENT_SCHEME as DOCUMENT_SCHEME
from fourcorner.entrypoints.harness.strategies import INVOICE as INVOICE
from fourcorner.entrypoints.harness.strategies import PARTICIPANT_SCHEME as PARTICIPANT_SCHEME
from fourcorner.entrypoints.harness.strategies import PROCESS_SCHEME as PROCESS_SCHEME

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "bis-billing-3"
BASE_EXAMPLE = EXAMPLES / "base-example.xml"

SENDER = "0088:7300010000001"
RECEIVER = "0088:5790000435975"

_PADDING = b"<!-- " + b"padding " * 8190 + b"-->\n"  # 65,529 bytes


def parts(document_type: str) -> tuple[str, str, str]:
    """``(Standard, Type, TypeVersion)`` of a ``<ns>::<root>##<customization>::<version>``
    document type value."""
    standard, _, rest = document_type.partition("::")
    root = rest.partition("##")[0]
    version = document_type.rpartition("::")[2]
    return standard, root, version


def _identifier(value: Identifier | str, scheme: str) -> Identifier:
    return value if isinstance(value, Identifier) else Identifier(scheme, value)


def make_envelope(
    *,
    sender: str = SENDER,
    receiver: str = RECEIVER,
    document: Identifier | str | None = None,
    process: Identifier | str = BILLING_PROCESS,
    instance_id: str | None = None,
    created_at: datetime | None = None,
    country_c1: str = "SE",
    mls_to: Identifier | str | None = None,
    mls_type: MlsType | str | None = None,
) -> Sbdh:
    """The header ``make_sbd`` writes; Standard, Type and TypeVersion follow the document type."""
    document_type = INVOICE if document is None else _identifier(document, DOCUMENT_SCHEME)
    standard, root, version = parts(document_type.value)
    return Sbdh(
        sender=Identifier(PARTICIPANT_SCHEME, sender),
        receiver=Identifier(PARTICIPANT_SCHEME, receiver),
        instance_identifier=instance_id or str(uuid.uuid4()),
        standard=standard,
        type_version=version,
        type=root,
        created_at=created_at or datetime.now(UTC),
        document_type=document_type,
        process=_identifier(process, PROCESS_SCHEME),
        country_c1=country_c1,
        mls_to=None if mls_to is None else _identifier(mls_to, PARTICIPANT_SCHEME),
        mls_type=None if mls_type is None else MlsType(mls_type),
    )


def pad(payload: bytes, extra: int) -> bytes:
    """``payload`` with about ``extra`` bytes of comments before its root's end tag."""
    if extra < 16:
        return payload
    end = payload.rstrip().rfind(b"</")
    whole, rest = divmod(extra, len(_PADDING))
    last = b"<!-- " + b"." * max(rest - 9, 0) + b" -->\n" if rest >= 10 else b""
    return b"".join((payload[:end], _PADDING * whole, last, payload[end:]))


def make_sbd(
    *,
    sender: str = SENDER,
    receiver: str = RECEIVER,
    document: Identifier | str | None = None,
    process: Identifier | str = BILLING_PROCESS,
    instance_id: str | None = None,
    created_at: datetime | None = None,
    country_c1: str = "SE",
    mls_to: Identifier | str | None = None,
    mls_type: MlsType | str | None = None,
    payload: bytes | None = None,
    pad_to: int | None = None,
) -> bytes:
    """A valid SBD (``write_sbd``) of ``payload`` (default: the BIS Billing 3 base example
    invoice), about ``pad_to`` bytes long when that is given."""
    envelope = make_envelope(
        sender=sender,
        receiver=receiver,
        document=document,
        process=process,
        instance_id=instance_id,
        created_at=created_at,
        country_c1=country_c1,
        mls_to=mls_to,
        mls_type=mls_type,
    )
    body = BASE_EXAMPLE.read_bytes() if payload is None else payload
    sbd = write_sbd(envelope, body)
    if pad_to is None or pad_to <= len(sbd):
        return sbd
    return write_sbd(envelope, pad(body, pad_to - len(sbd)))


def make_as4_message(
    pki: TestPki,
    sbd: bytes,
    *,
    sender: Identifier | str = SENDER,
    receiver: Identifier | str = RECEIVER,
    document: Identifier | str | None = None,
    process: Identifier | str = BILLING_PROCESS,
    signer: tuple[x509.Certificate, rsa.RSAPrivateKey] | None = None,
    message_id: str | None = None,
    timestamp: datetime | None = None,
    **over: Any,
) -> OutboundMessage:
    """``sbd`` in the AS4 UserMessage an access point sends to ``pki``'s own: signed by
    ``signer`` (default: ``pki``'s access point certificate and key, as the server sending to
    itself), from the signer's CN to ``pki``'s seat, its ebMS header naming ``sender``,
    ``receiver``, ``document`` (default: the invoice) and ``process`` as the SBDH does;
    ``over`` replaces any other of ``build_user_message``'s values."""
    cert, key = signer or (pki.ap_certificate, pki.ap_key)
    cn = cert.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)[0].value
    original = _identifier(sender, PARTICIPANT_SCHEME)
    final = _identifier(receiver, PARTICIPANT_SCHEME)
    service = _identifier(process, PROCESS_SCHEME)
    action = INVOICE if document is None else _identifier(document, DOCUMENT_SCHEME)
    values: dict[str, Any] = {
        "payload": sbd,
        "message_id": message_id or f"{uuid.uuid4()}@test",
        "conversation_id": str(uuid.uuid4()),
        "timestamp": timestamp or datetime.now(UTC),
        "from_party": str(cn),
        "to_party": pki.seat_id,
        "service": service.value,
        "service_type": service.scheme,
        "action": str(action),
        "original_sender": (original.scheme, original.value),
        "final_recipient": (final.scheme, final.value),
        "sender_key": key,
        "sender_certificate": cert,
        "receiver_certificate": pki.ap_certificate,
    }
    return build_user_message(**(values | over))
