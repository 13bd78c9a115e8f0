"""The AS4 message layer against itself: a UserMessage built for corner 3 is read back, answered
with a receipt or an error, and the answer is checked by corner 2; every tampering, untrusted
certificate, hostile XML or oversized payload is refused with its ebMS code and no payload.

Replays: ``read_user_message`` keeps no state, so reading one message twice gives the same
result twice; recognising a MessageId already delivered is the caller's business.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import rsa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

from fourcorner.adapters.as4 import (
    SIGNAL_CONTENT_TYPE,
    As4Error,
    ErrorSignal,
    InboundMessage,
    OutboundMessage,
    Receipt,
    build_error,
    build_receipt,
    build_user_message,
    ebms,
    read_signal,
    read_user_message,
)
from fourcorner.adapters.as4.constants import DEFAULT_MPC, EB
from fourcorner.adapters.as4.mime import build_related, split_related
from fourcorner.adapters.pki import TestPki, ensure_test_pki, issue_leaf, new_ca, verify_chain

NOW = datetime.now(UTC)
SENDER, RECEIVER = "PFC000001", "PFC000002"
SCHEME = "iso6523-actorid-upis"
DOCUMENT = (
    "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2::Invoice"
    "##urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0::2.1"
)
PROCESS = "urn:fdc:peppol.eu:2017:poacc:billing:01:1.0"
MAX_PAYLOAD = 10 * 1024 * 1024


def sbd(size: int = 10_000, instance: str = "5e0a8c4e-3b8f-4e44-9a1c-0b7a1d2c9f01") -> bytes:
    """A Standard Business Document (schema-valid SBDH) of about ``size`` bytes."""
    head = (
        '<StandardBusinessDocument xmlns="http://www.unece.org/cefact/namespaces/'
        'StandardBusinessDocumentHeader"><StandardBusinessDocumentHeader>'
        "<HeaderVersion>1.0</HeaderVersion>"
        f'<Sender><Identifier Authority="{SCHEME}">0088:7300010000001</Identifier></Sender>'
        f'<Receiver><Identifier Authority="{SCHEME}">0088:5790000435975</Identifier></Receiver>'
        "<DocumentIdentification>"
        "<Standard>urn:oasis:names:specification:ubl:schema:xsd:Invoice-2</Standard>"
        f"<TypeVersion>2.1</TypeVersion><InstanceIdentifier>{instance}</InstanceIdentifier>"
        "<Type>Invoice</Type><CreationDateAndTime>2026-01-02T10:00:00Z</CreationDateAndTime>"
        "</DocumentIdentification><BusinessScope>"
        "<Scope><Type>DOCUMENTID</Type>"
        f"<InstanceIdentifier>{DOCUMENT.partition('::')[0]}::Invoice##urn:cen.eu:en16931:2017"
        "#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0::2.1</InstanceIdentifier>"
        "<Identifier>busdox-docid-qns</Identifier></Scope>"
        f"<Scope><Type>PROCESSID</Type><InstanceIdentifier>{PROCESS}</InstanceIdentifier>"
        "<Identifier>cenbii-procid-ubl</Identifier></Scope>"
        "<Scope><Type>COUNTRY_C1</Type><InstanceIdentifier>BE</InstanceIdentifier></Scope>"
        "</BusinessScope></StandardBusinessDocumentHeader>"
        '<Invoice xmlns="urn:oasis:names:specification:ubl:schema:xsd:Invoice-2">'
    ).encode()
    tail = b"</Invoice></StandardBusinessDocument>"
    line = b"<Note>Line %08d of an invoice whose payload is padded to a size.</Note>"
    lines = max(0, (size - len(head) - len(tail)) // len(line % 0))
    return head + b"".join(line % i for i in range(lines)) + tail


@attrs.frozen
class Parties:
    pki: TestPki
    receiver_certificate: x509.Certificate
    receiver_key: rsa.RSAPrivateKey

    def check(self, certificate: x509.Certificate) -> None:
        verify_chain(certificate, [self.pki.ap_ca], self.pki.trust_anchors, datetime.now(UTC))


@pytest.fixture(scope="session")
def parties(tmp_path_factory: pytest.TempPathFactory) -> Parties:
    """The test PKI (shared with the interop suite), with a second AP certificate for corner 3
    that reuses the SMP's key (no new key to generate)."""
    pki = ensure_test_pki(Path(tmp_path_factory.getbasetemp()) / "as4-pki")
    certificate, _ = issue_leaf(
        pki.ap_ca,
        pki.ap_ca_key,
        RECEIVER,
        not_before=NOW - timedelta(hours=1),
        not_after=NOW + timedelta(days=30),
        key=pki.smp_key,
    )
    return Parties(pki, certificate, pki.smp_key)


# the ebMS header values of every message built here
HEADER: dict[str, Any] = {
    "conversation_id": "conversation-1",
    "timestamp": NOW,
    "from_party": SENDER,
    "to_party": RECEIVER,
    "service": PROCESS,
    "service_type": "cenbii-procid-ubl",
    "action": f"busdox-docid-qns::{DOCUMENT}",
    "original_sender": (SCHEME, "0088:7300010000001"),
    "final_recipient": (SCHEME, "0088:5790000435975"),
}


def send(
    parties: Parties,
    payload: bytes | None = None,
    *,
    message_id: str = "msg-1@fourcorner.test",
    key: rsa.RSAPrivateKey | None = None,
    certificate: x509.Certificate | None = None,
) -> OutboundMessage:
    return build_user_message(
        payload=sbd() if payload is None else payload,
        message_id=message_id,
        **HEADER,
        sender_key=parties.pki.ap_key if key is None else key,
        sender_certificate=parties.pki.ap_certificate if certificate is None else certificate,
        receiver_certificate=parties.receiver_certificate,
    )


def receive(
    parties: Parties, content_type: str, body: bytes, *, max_payload: int = MAX_PAYLOAD
) -> InboundMessage:
    return read_user_message(
        content_type,
        body,
        receiver_key=parties.receiver_key,
        receiver_certificate=parties.receiver_certificate,
        check_certificate=parties.check,
        max_payload=max_payload,
        now=datetime.now(UTC),
    )


def answer(parties: Parties, signal: bytes, sent: OutboundMessage) -> Receipt | ErrorSignal:
    return read_signal(
        SIGNAL_CONTENT_TYPE,
        signal,
        sent=sent,
        receiver_certificate=parties.receiver_certificate,
        now=datetime.now(UTC),
    )


def receipt_for(parties: Parties, inbound: InboundMessage) -> bytes:
    return build_receipt(
        inbound,
        key=parties.receiver_key,
        certificate=parties.receiver_certificate,
        message_id="receipt-1@fourcorner.test",
        timestamp=NOW,
    )


def refused(code: str, call: Callable[[], object]) -> As4Error:
    with pytest.raises(As4Error) as caught:
        call()
    assert caught.value.code == code, str(caught.value)
    return caught.value


def rewrite(
    message: OutboundMessage,
    soap: Callable[[bytes], bytes] = lambda s: s,
    attachment: Callable[[bytes], bytes] = lambda a: a,
) -> tuple[str, bytes]:
    """The message with its SOAP part and its attachment passed through the given edits."""
    envelope, attachments = split_related(message.content_type, message.body)
    ((cid, data),) = attachments.items()
    return build_related(soap(envelope), [(cid, attachment(data))])


def flip(data: bytes, index: int) -> bytes:
    return data[:index] + bytes([data[index] ^ 0x01]) + data[index + 1 :]


# --- the round trip ------------------------------------------------------------------------


def test_a_message_is_read_back_and_its_receipt_accepted(parties: Parties) -> None:
    payload = sbd(50_000)
    sent = send(parties, payload)
    assert sent.content_type.startswith('multipart/related; type="application/soap+xml"')
    assert b"Content-Disposition" not in sent.body

    inbound = receive(parties, sent.content_type, sent.body)

    assert inbound.payload == payload
    assert (inbound.message_id, inbound.from_party, inbound.to_party) == (
        "msg-1@fourcorner.test",
        SENDER,
        RECEIVER,
    )
    assert (inbound.service, inbound.service_type) == (PROCESS, "cenbii-procid-ubl")
    assert inbound.action == f"busdox-docid-qns::{DOCUMENT}"
    assert inbound.original_sender == (SCHEME, "0088:7300010000001")
    assert inbound.final_recipient == (SCHEME, "0088:5790000435975")
    assert inbound.conversation_id == "conversation-1"
    assert abs(inbound.timestamp - NOW) < timedelta(milliseconds=1)
    assert inbound.sender_certificate == parties.pki.ap_certificate
    assert len(inbound.signature_references) == 3

    receipt = answer(parties, receipt_for(parties, inbound), sent)

    assert isinstance(receipt, Receipt)
    assert receipt.ref_to_message_id == sent.message_id
    assert receipt.message_id == "receipt-1@fourcorner.test"
    assert sorted(receipt.references) == sorted(sent.references)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.integers(ebms.MAX_MESSAGE_ID - 2, ebms.MAX_MESSAGE_ID + 2) | st.integers(1, 4000),
    st.sampled_from(["a", "\u00e9", "\U0001f600"]),
)
def test_a_message_id_is_at_most_255_characters(parties: Parties, length: int, char: str) -> None:
    """A MessageId is stored and indexed with the transaction (a PostgreSQL index entry holds
    at most 2704 bytes): up to 255 characters, of any width, it is read; a longer one is an
    invalid header (EBMS:0009), answered as every other one is, but without referring to it:
    the sender's text of any length is not echoed back in the error."""
    message_id = (char * length)[:-1] + "@" if length > 1 else "@"
    sent = send(parties, message_id=message_id)
    if length <= ebms.MAX_MESSAGE_ID:
        assert receive(parties, sent.content_type, sent.body).message_id == message_id
    else:
        error = refused("EBMS:0009", lambda: receive(parties, sent.content_type, sent.body))
        assert "longer than 255 characters" in str(error)
        assert error.ref_to_message_id is None


@pytest.mark.parametrize(
    "written", ["msg-1@fourcorner.test", "x" * 256 + "@test", "<x>msg-1</x>@fourcorner.test"]
)
def test_an_error_refers_only_to_a_message_id_a_message_may_carry(
    parties: Parties, written: str
) -> None:
    """A message refused for another reason (no Timestamp) is answered with an error that
    refers to its MessageId when that is one a message may carry, and to none when it is
    over-long or holds elements: the sender's text is not echoed back."""
    sent = send(parties, message_id="msg-1@fourcorner.test")

    def edit(soap: bytes) -> bytes:
        soap = re.sub(rb"<eb:Timestamp>[^<]*</eb:Timestamp>", b"", soap)
        return soap.replace(b">msg-1@fourcorner.test<", f">{written}<".encode())

    error = refused("EBMS:0009", lambda: receive(parties, *rewrite(sent, edit)))
    valid = "<" not in written and len(written) <= ebms.MAX_MESSAGE_ID
    assert error.ref_to_message_id == (written if valid else None)
    signal = build_error(
        ref_to_message_id=error.ref_to_message_id,
        error=error,
        key=parties.receiver_key,
        certificate=parties.receiver_certificate,
        message_id="error-1@fourcorner.test",
        timestamp=NOW,
    )
    assert (b"RefToMessageId" in signal) is valid
    assert (b"msg-1" in signal) is valid


def test_a_signed_error_reaches_the_sender(parties: Parties) -> None:
    sent = send(parties)
    signal = build_error(
        ref_to_message_id=sent.message_id,
        error=As4Error.not_serviced(),
        key=parties.receiver_key,
        certificate=parties.receiver_certificate,
        message_id="error-1@fourcorner.test",
        timestamp=NOW,
    )

    error = answer(parties, signal, sent)

    assert error == ErrorSignal(
        code="EBMS:0004",
        severity="failure",
        description="An error occurred.",
        detail="PEPPOL:NOT_SERVICED",
        short_description="Other",
        ref_to_message_id=sent.message_id,
    )


def test_a_rebuilt_message_keeps_its_digests(parties: Parties) -> None:
    first, second = send(parties), send(parties)

    assert first.references == second.references
    assert first.body != second.body  # a fresh content key and IV every time


def test_reading_the_same_message_twice_gives_the_same_message(parties: Parties) -> None:
    sent = send(parties)

    first = receive(parties, sent.content_type, sent.body)
    second = receive(parties, sent.content_type, sent.body)

    assert first == second


# --- tampering -----------------------------------------------------------------------------


def _flip_property(soap: bytes) -> bytes:
    return soap.replace(b">0088:7300010000001<", b">0088:7300010000002<", 1)


def _fill_body(soap: bytes) -> bytes:
    return re.sub(rb"<S12:Body ([^>]*)/>", rb"<S12:Body \1>x</S12:Body>", soap)


def _rename_body(soap: bytes) -> bytes:
    return soap.replace(b'wsu:Id="id-body"', b'wsu:Id="id-bodz"')


def _flip_signature_value(soap: bytes) -> bytes:
    start = soap.index(b"<ds:SignatureValue>") + len(b"<ds:SignatureValue>") + 10
    return soap[:start] + (b"B" if soap[start : start + 1] == b"A" else b"A") + soap[start + 1 :]


def _relative_namespace(soap: bytes) -> bytes:
    return soap.replace(b"<eb:Messaging ", b'<eb:Messaging xmlns:x="relative/uri" ', 1)


def _drop_signature(soap: bytes) -> bytes:
    return re.sub(rb"<ds:Signature .*</ds:Signature>", b"", soap, flags=re.DOTALL)


def _duplicate_messaging_id(soap: bytes) -> bytes:
    return soap.replace(b'<S12:Body wsu:Id="id-body"', b'<S12:Body wsu:Id="id-messaging"')


@pytest.mark.parametrize(
    ("edit_soap", "edit_attachment", "code"),
    [
        pytest.param(None, lambda a: flip(a, len(a) // 2), "EBMS:0102", id="ciphertext"),
        pytest.param(None, lambda a: flip(a, len(a) - 1), "EBMS:0102", id="gcm-tag"),
        pytest.param(None, lambda a: a[:20], "EBMS:0102", id="truncated-attachment"),
        pytest.param(_flip_property, None, "EBMS:0101", id="signed-header-property"),
        pytest.param(_fill_body, None, "EBMS:0101", id="body-content"),
        pytest.param(_rename_body, None, "EBMS:0101", id="body-not-covered"),
        pytest.param(_flip_signature_value, None, "EBMS:0101", id="signature-value"),
        pytest.param(_duplicate_messaging_id, None, "EBMS:0101", id="duplicate-id"),
        pytest.param(_relative_namespace, None, "EBMS:0101", id="uncanonicalisable"),
        pytest.param(_drop_signature, None, "EBMS:0103", id="unsigned"),
    ],
)
def test_a_tampered_message_is_refused(
    parties: Parties,
    edit_soap: Callable[[bytes], bytes] | None,
    edit_attachment: Callable[[bytes], bytes] | None,
    code: str,
) -> None:
    sent = send(parties)
    content_type, body = rewrite(
        sent,
        soap=edit_soap or (lambda s: s),
        attachment=edit_attachment or (lambda a: a),
    )

    error = refused(code, lambda: receive(parties, content_type, body))

    assert error.ref_to_message_id == sent.message_id


def test_a_payload_swapped_with_its_key_fails_the_signed_digest(parties: Parties) -> None:
    """Another message's attachment and wrapped key decrypt fine, but are not what was signed."""
    sent = send(parties, sbd(instance="11111111-1111-4111-8111-111111111111"))
    other = send(parties, sbd(instance="22222222-2222-4222-8222-222222222222"))
    other_soap, other_attachments = split_related(other.content_type, other.body)
    wrapped = re.search(rb"<xenc:CipherValue>[^<]*</xenc:CipherValue>", other_soap)
    assert wrapped is not None

    content_type, body = rewrite(
        sent,
        soap=lambda s: re.sub(rb"<xenc:CipherValue>[^<]*</xenc:CipherValue>", wrapped[0], s),
        attachment=lambda _: next(iter(other_attachments.values())),
    )

    refused("EBMS:0101", lambda: receive(parties, content_type, body))


def test_a_message_for_another_access_point_is_refused(parties: Parties) -> None:
    sent = send(parties)

    refused(
        "EBMS:0003",
        lambda: read_user_message(
            sent.content_type,
            sent.body,
            receiver_key=parties.pki.ap_key,
            receiver_certificate=parties.pki.ap_certificate,
            check_certificate=parties.check,
            max_payload=MAX_PAYLOAD,
            now=datetime.now(UTC),
        ),
    )


# --- the sender's certificate --------------------------------------------------------------


@pytest.fixture(scope="module")
def other_certificates(parties: Parties) -> dict[str, x509.Certificate]:
    """Certificates for the sender's key that must not be accepted."""
    pki, now = parties.pki, datetime.now(UTC)
    rogue, rogue_key = new_ca("rogue ACCESS POINT CA")
    window = {"not_before": now - timedelta(hours=1), "not_after": now + timedelta(days=30)}
    return {
        "untrusted": issue_leaf(rogue, rogue_key, SENDER, key=pki.ap_key, **window)[0],
        "other-cn": issue_leaf(pki.ap_ca, pki.ap_ca_key, "PFC000009", key=pki.ap_key, **window)[0],
        "expired": issue_leaf(
            pki.ap_ca,
            pki.ap_ca_key,
            SENDER,
            not_before=now - timedelta(days=60),
            not_after=now - timedelta(days=1),
            key=pki.ap_key,
        )[0],
    }


@pytest.mark.parametrize("which", ["untrusted", "other-cn", "expired"])
def test_a_sender_certificate_that_is_not_trusted_is_refused(
    parties: Parties, other_certificates: dict[str, x509.Certificate], which: str
) -> None:
    sent = send(parties, certificate=other_certificates[which])

    refused("EBMS:0101", lambda: receive(parties, sent.content_type, sent.body))


def test_a_certificate_check_that_raises_as4error_keeps_its_code(parties: Parties) -> None:
    sent = send(parties)

    def not_serviced(_: x509.Certificate) -> None:
        raise As4Error.not_serviced()

    error = refused(
        "EBMS:0004",
        lambda: read_user_message(
            sent.content_type,
            sent.body,
            receiver_key=parties.receiver_key,
            receiver_certificate=parties.receiver_certificate,
            check_certificate=not_serviced,
            max_payload=MAX_PAYLOAD,
            now=datetime.now(UTC),
        ),
    )
    assert error.ref_to_message_id == sent.message_id


# --- hostile XML and payloads --------------------------------------------------------------

LAUGHS = (
    b'<!DOCTYPE lolz [<!ENTITY lol0 "lol">'
    + b"".join(b'<!ENTITY lol%d "%s">' % (i, b"&lol%d;" % (i - 1) * 10) for i in range(1, 10))
    + b"]>"
)


def _with_doctype(doctype: bytes, reference: bytes = b"") -> Callable[[bytes], bytes]:
    def edit(soap: bytes) -> bytes:
        body = soap.split(b"?>", 1)[1]
        return doctype + body.replace(b"<eb:MessageId>", b"<eb:MessageId>" + reference, 1)

    return edit


def _utf16_doctype(soap: bytes) -> bytes:
    text = soap.split(b"?>", 1)[1].decode()
    return ('<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE e>' + text).encode("utf-16")


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(_with_doctype(b"<!DOCTYPE e>"), id="doctype"),
        pytest.param(_with_doctype(b'<!DOCTYPE e [<!ENTITY x "y">]>', b"&x;"), id="entity"),
        pytest.param(
            _with_doctype(b'<!DOCTYPE e [<!ENTITY x SYSTEM "file:///etc/passwd">]>', b"&x;"),
            id="external-entity",
        ),
        pytest.param(_with_doctype(LAUGHS, b"&lol9;"), id="billion-laughs"),
        pytest.param(_utf16_doctype, id="doctype-in-utf16"),
        pytest.param(lambda s: s[: len(s) // 2], id="not-well-formed"),
    ],
)
def test_hostile_xml_is_refused(parties: Parties, edit: Callable[[bytes], bytes]) -> None:
    sent = send(parties)
    content_type, body = rewrite(sent, soap=edit)

    refused("EBMS:0009", lambda: receive(parties, content_type, body))


def test_a_payload_above_the_cap_is_refused(parties: Parties) -> None:
    payload = sbd(200_000)  # compresses to a few kilobytes
    sent = send(parties, payload)

    refused(
        "EBMS:0303",
        lambda: receive(parties, sent.content_type, sent.body, max_payload=len(payload) - 1),
    )
    assert (
        receive(parties, sent.content_type, sent.body, max_payload=len(payload)).payload == payload
    )


def test_a_message_that_is_not_multipart_is_refused(parties: Parties) -> None:
    sent = send(parties)

    refused("EBMS:0007", lambda: receive(parties, "application/soap+xml", sent.body))


# --- the answer ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def exchange(parties: Parties) -> tuple[OutboundMessage, InboundMessage]:
    sent = send(parties)
    return sent, receive(parties, sent.content_type, sent.body)


def test_a_receipt_signed_with_another_certificate_is_refused(
    parties: Parties, exchange: tuple[OutboundMessage, InboundMessage]
) -> None:
    sent, inbound = exchange
    signal = build_receipt(
        inbound,
        key=parties.pki.ap_key,
        certificate=parties.pki.ap_certificate,
        message_id="receipt-2@fourcorner.test",
        timestamp=NOW,
    )

    refused("EBMS:0101", lambda: answer(parties, signal, sent))


def test_a_receipt_whose_nri_differs_is_refused(
    parties: Parties, exchange: tuple[OutboundMessage, InboundMessage]
) -> None:
    sent, inbound = exchange
    other = send(parties, sbd(20_000))
    other_inbound = receive(parties, other.content_type, other.body)
    forged = attrs.evolve(inbound, signature_references=other_inbound.signature_references)

    refused("EBMS:0302", lambda: answer(parties, receipt_for(parties, forged), sent))


def test_a_receipt_for_another_message_is_refused(
    parties: Parties, exchange: tuple[OutboundMessage, InboundMessage]
) -> None:
    sent, inbound = exchange
    forged = attrs.evolve(inbound, message_id="msg-2@fourcorner.test")

    refused("EBMS:0302", lambda: answer(parties, receipt_for(parties, forged), sent))


def test_a_receipt_acknowledging_less_than_was_sent_is_refused(
    parties: Parties, exchange: tuple[OutboundMessage, InboundMessage]
) -> None:
    sent, inbound = exchange
    forged = attrs.evolve(inbound, signature_references=inbound.signature_references[:2])

    refused("EBMS:0302", lambda: answer(parties, receipt_for(parties, forged), sent))


def test_a_tampered_receipt_is_refused(
    parties: Parties, exchange: tuple[OutboundMessage, InboundMessage]
) -> None:
    sent, inbound = exchange
    signal = receipt_for(parties, inbound).replace(b"receipt-1@", b"receipt-9@")

    refused("EBMS:0101", lambda: answer(parties, signal, sent))


def test_an_unsigned_error_is_refused(parties: Parties) -> None:
    sent = send(parties)
    signal = build_error(
        ref_to_message_id=sent.message_id,
        error=As4Error.not_serviced(),
        key=parties.receiver_key,
        certificate=parties.receiver_certificate,
        message_id="error-2@fourcorner.test",
        timestamp=NOW,
    )

    refused("EBMS:0103", lambda: answer(parties, _drop_signature(signal), sent))


def test_an_answer_that_is_not_soap_is_refused(
    parties: Parties, exchange: tuple[OutboundMessage, InboundMessage]
) -> None:
    sent, inbound = exchange

    refused(
        "EBMS:0007",
        lambda: read_signal(
            "text/html",
            receipt_for(parties, inbound),
            sent=sent,
            receiver_certificate=parties.receiver_certificate,
            now=datetime.now(UTC),
        ),
    )


# --- garbage -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample(parties: Parties) -> Iterator[OutboundMessage]:
    yield send(parties, sbd(3_000))


_CONTENT_TYPES = st.one_of(
    st.just("multipart/related; boundary=b"),
    st.builds(
        lambda b: f'multipart/related; type="application/soap+xml"; boundary="{b}"',
        st.text(max_size=80),
    ),
    st.text(max_size=120),
)
_PART = st.builds(
    lambda headers, data: headers + b"\r\n\r\n" + data,
    st.sampled_from(
        [
            b"Content-Type: application/soap+xml",
            b"Content-Type: application/octet-stream\r\nContent-ID: <a@b>",
            b"Content-Type: application/octet-stream\r\nContent-Transfer-Encoding: base64",
            b"content-type: application/soap+xml;\r\n charset=utf-8",
            b"X: y",
            b"",
        ]
    ),
    st.binary(max_size=300),
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    content_type=_CONTENT_TYPES,
    parts=st.lists(_PART, max_size=4),
    closing=st.sampled_from([b"--b--\r\n", b"--b--", b"", b"--b"]),
)
def test_random_multipart_raises_only_as4error(
    parties: Parties, content_type: str, parts: list[bytes], closing: bytes
) -> None:
    body = b"".join(b"--b\r\n" + part + b"\r\n" for part in parts) + closing
    with pytest.raises(As4Error):
        receive(parties, content_type, body)


def mangle(data: bytes, draw: st.DataObject) -> bytes:
    """``data`` after a few random byte flips, cuts, insertions and deletions."""
    mangled = bytearray(data)
    for _ in range(draw.draw(st.integers(1, 8), label="edits")):
        index = draw.draw(st.integers(0, max(0, len(mangled) - 1)), label="index")
        action = draw.draw(st.sampled_from(["flip", "cut", "insert", "delete"]), label="action")
        if action == "flip" and mangled:
            mangled[index] ^= draw.draw(st.integers(1, 255), label="mask")
        elif action == "cut":
            del mangled[index:]
        elif action == "insert":
            mangled[index:index] = draw.draw(st.binary(min_size=1, max_size=20), label="bytes")
        else:
            del mangled[index : index + draw.draw(st.integers(1, 50), label="length")]
    return bytes(mangled)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_a_mangled_message_raises_only_as4error(
    parties: Parties, sample: OutboundMessage, data: st.DataObject
) -> None:
    try:
        inbound = receive(parties, sample.content_type, mangle(sample.body, data))
    except As4Error:
        return
    # Only edits outside what is signed and encrypted (MIME preamble, padding) can pass.
    assert inbound.payload == sbd(3_000)


@pytest.fixture(scope="module")
def sample_receipt(parties: Parties, sample: OutboundMessage) -> bytes:
    return receipt_for(parties, receive(parties, sample.content_type, sample.body))


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_a_mangled_receipt_raises_only_as4error(
    parties: Parties, sample: OutboundMessage, sample_receipt: bytes, data: st.DataObject
) -> None:
    try:
        receipt = answer(parties, mangle(sample_receipt, data), sample)
    except As4Error:
        return
    assert isinstance(receipt, Receipt)
    assert receipt.ref_to_message_id == sample.message_id


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    signal=st.binary(max_size=2_000),
    content_type=st.sampled_from([SIGNAL_CONTENT_TYPE, "multipart/related; boundary=x"]),
)
def test_a_garbage_answer_raises_only_as4error(
    parties: Parties, sample: OutboundMessage, signal: bytes, content_type: str
) -> None:
    with pytest.raises(As4Error):
        read_signal(
            content_type,
            signal,
            sent=sample,
            receiver_certificate=parties.receiver_certificate,
            now=datetime.now(UTC),
        )


# --- the UserMessage header against the profile --------------------------------------------


def _messaging(edit: Callable[[etree._Element], None] | None = None) -> etree._Element:
    messaging = etree.Element(f"{{{EB}}}Messaging")
    ebms.append_user_message(
        messaging,
        message_id="m-1@ap.example",
        **HEADER,
        payload_cid="sbd-1@ap.example",
    )
    if edit is not None:
        edit(messaging)
    return messaging


def _user_message(messaging: etree._Element) -> etree._Element:
    found = messaging.find(f"{{{EB}}}UserMessage")
    assert found is not None
    return found


def _ref_to_message_id(messaging: etree._Element) -> None:
    info = _user_message(messaging).find(f"{{{EB}}}MessageInfo")
    assert info is not None
    etree.SubElement(info, f"{{{EB}}}RefToMessageId").text = "earlier@ap.example"


def test_the_default_mpc_may_be_named_or_left_out() -> None:
    assert ebms.read_user_message(_messaging()).message_id == "m-1@ap.example"
    named = _messaging(lambda m: _user_message(m).set("mpc", DEFAULT_MPC))
    assert ebms.read_user_message(named).message_id == "m-1@ap.example"


@pytest.mark.parametrize(
    ("edit", "code"),
    [
        # the profile uses the default MPC only
        (lambda m: _user_message(m).set("mpc", "urn:example:other-mpc"), "EBMS:0010"),
        # a UserMessage never refers to another message in the profile
        (_ref_to_message_id, "EBMS:0003"),
    ],
    ids=["other-mpc", "ref-to-message-id"],
)
def test_a_user_message_outside_the_profile_is_refused(
    edit: Callable[[etree._Element], None], code: str
) -> None:
    refused(code, lambda: ebms.read_user_message(_messaging(edit)))
