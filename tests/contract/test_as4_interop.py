"""Interoperability of the AS4 message layer with an independent implementation, the PyPI
package ``as4`` (0.2.0, a test-only dependency that ``src/`` never imports), over HTTP on
127.0.0.1 both ways:

(a) ``as4`` builds a Peppol message and POSTs it to a tiny aiohttp server that reads it with
    ``read_user_message`` and answers with ``build_receipt`` (or ``build_error``); ``as4``'s
    sending exchange accepts the receipt (signature, RefToMessageId, non-repudiation digests)
    or records the error.
(b) ``build_user_message`` is POSTed to a tiny aiohttp server running ``as4``'s receiver
    (chain to the test root, CN = From PartyId, coverage, digests, decryption, SBDH checks);
    ``read_signal`` accepts its receipt, or reads its error.

``as4`` builds the SBDH itself around a bare document and carries one payload; the messages
here carry one payload, and (b) sends an SBD whose header ``as4`` validates against its schema.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import rsa
from lxml import etree

from fourcorner.adapters.as4 import (
    SIGNAL_CONTENT_TYPE,
    As4Error,
    ErrorSignal,
    InboundMessage,
    Receipt,
    build_error,
    build_receipt,
    build_user_message,
    read_signal,
    read_user_message,
)
from fourcorner.adapters.pki import TestPki, ensure_test_pki, issue_leaf, verify_chain

if os.environ.get("CI", "").lower() == "true":  # CI must run the interop suite, never skip it
    import as4
    import as4.peppol as as4_peppol
else:
    as4 = pytest.importorskip("as4", reason="the interop suite needs the PyPI package as4 (0.2.0)")
    as4_peppol = pytest.importorskip("as4.peppol")

NOW = datetime.now(UTC)
SENDER, RECEIVER = "PFC000001", "PFC000002"
SCHEME = "iso6523-actorid-upis"
DOCUMENT = (
    "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2::Invoice"
    "##urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0::2.1"
)
PROCESS = "urn:fdc:peppol.eu:2017:poacc:billing:01:1.0"
ORIGINAL_SENDER, FINAL_RECIPIENT = "0088:7300010000001", "0088:5790000435975"
INVOICE = (
    b'<Invoice xmlns="urn:oasis:names:specification:ubl:schema:xsd:Invoice-2">'
    + b"".join(b"<Note>Line %04d of an interop invoice.</Note>" % i for i in range(200))
    + b"</Invoice>"
)
SH = "http://www.unece.org/cefact/namespaces/StandardBusinessDocumentHeader"

Client = Callable[[web.Application], Awaitable[TestClient[Any, Any]]]


@attrs.frozen
class Parties:
    pki: TestPki
    receiver_certificate: x509.Certificate
    receiver_key: rsa.RSAPrivateKey

    def check(self, certificate: x509.Certificate) -> None:
        verify_chain(certificate, [self.pki.ap_ca], self.pki.trust_anchors, datetime.now(UTC))


@pytest.fixture(scope="session")
def parties(tmp_path_factory: pytest.TempPathFactory) -> Parties:
    """The test PKI (shared with the message suite); corner 3's certificate reuses the SMP's
    key, so no key is generated here."""
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


def c14n(element: etree._Element) -> bytes:
    return etree.tostring(element, method="c14n", exclusive=True)


def sbd() -> bytes:
    """The SBD for direction (b): a header ``as4`` validates, around ``INVOICE``."""
    return (
        (
            f'<StandardBusinessDocument xmlns="{SH}"><StandardBusinessDocumentHeader>'
            "<HeaderVersion>1.0</HeaderVersion>"
            f'<Sender><Identifier Authority="{SCHEME}">{ORIGINAL_SENDER}</Identifier></Sender>'
            f'<Receiver><Identifier Authority="{SCHEME}">{FINAL_RECIPIENT}</Identifier></Receiver>'
            "<DocumentIdentification>"
            "<Standard>urn:oasis:names:specification:ubl:schema:xsd:Invoice-2</Standard>"
            f"<TypeVersion>2.1</TypeVersion><InstanceIdentifier>{uuid.uuid4()}</InstanceIdentifier>"
            "<Type>Invoice</Type><CreationDateAndTime>2026-01-02T10:00:00Z</CreationDateAndTime>"
            "</DocumentIdentification><BusinessScope>"
            f"<Scope><Type>DOCUMENTID</Type><InstanceIdentifier>{DOCUMENT}</InstanceIdentifier>"
            "<Identifier>busdox-docid-qns</Identifier></Scope>"
            f"<Scope><Type>PROCESSID</Type><InstanceIdentifier>{PROCESS}</InstanceIdentifier>"
            "<Identifier>cenbii-procid-ubl</Identifier></Scope>"
            "<Scope><Type>COUNTRY_C1</Type><InstanceIdentifier>BE</InstanceIdentifier></Scope>"
            "</BusinessScope></StandardBusinessDocumentHeader>"
        ).encode()
        + INVOICE
        + b"</StandardBusinessDocument>"
    )


# --- (a) as4 sends, we receive -------------------------------------------------------------


def as4_sending_exchange(parties: Parties) -> Any:
    local = as4_peppol.create_peppol_internal_party(
        SENDER, parties.pki.ap_certificate, as4.AS4LocalPrivateKey(parties.pki.ap_key)
    )
    remote = as4_peppol.create_peppol_external_party(RECEIVER, parties.receiver_certificate)
    return as4_peppol.PeppolSendingExchange(
        profile=as4_peppol.PeppolAS4Profile, local_party=local, remote_party=remote
    )


def as4_builder_args() -> Any:
    return as4_peppol.PeppolAS4MessageBuilderArgs(
        sender=ORIGINAL_SENDER,
        recipient=FINAL_RECIPIENT,
        document_type_identifier=as4_peppol.BusdoxDocidQnsDocumentIdentifier.from_identifier_value(
            DOCUMENT
        ),
        document_identification_instance_identifier=str(uuid.uuid4()),
        process_identifier=PROCESS,
        c1_country_id="BE",
    )


def corner3(parties: Parties, received: list[InboundMessage], *, serviced: bool) -> web.Application:
    """Our receiving side: read, then answer with a receipt, or with an error."""

    async def handle(request: web.Request) -> web.Response:
        body = await request.read()
        try:
            inbound = read_user_message(
                request.headers["Content-Type"],
                body,
                receiver_key=parties.receiver_key,
                receiver_certificate=parties.receiver_certificate,
                check_certificate=parties.check,
                max_payload=1024 * 1024,
                now=datetime.now(UTC),
            )
            if not serviced:
                raise As4Error.not_serviced(inbound.message_id)
        except As4Error as e:
            signal = build_error(
                ref_to_message_id=e.ref_to_message_id,
                error=e,
                key=parties.receiver_key,
                certificate=parties.receiver_certificate,
                message_id=f"{uuid.uuid4()}@fourcorner.test",
                timestamp=datetime.now(UTC),
            )
        else:
            received.append(inbound)
            signal = build_receipt(
                inbound,
                key=parties.receiver_key,
                certificate=parties.receiver_certificate,
                message_id=f"{uuid.uuid4()}@fourcorner.test",
                timestamp=datetime.now(UTC),
            )
        return web.Response(body=signal, headers={"Content-Type": SIGNAL_CONTENT_TYPE})

    app = web.Application()
    app.router.add_post("/as4", handle)
    return app


async def test_as4_sends_we_read_and_as4_accepts_our_receipt(
    parties: Parties, aiohttp_client: Client
) -> None:
    received: list[InboundMessage] = []
    client = await aiohttp_client(corner3(parties, received, serviced=True))
    exchange = as4_sending_exchange(parties)
    headers, body = exchange.build(INVOICE, as4_builder_args())
    exchange.mark_sent()

    response = await client.post("/as4", data=body, headers=headers)
    signal = await response.read()

    assert response.status == 200
    assert response.headers["Content-Type"] == SIGNAL_CONTENT_TYPE
    ((inbound,),) = (received,)
    assert inbound.message_id == exchange.message_id
    assert (inbound.from_party, inbound.to_party) == (SENDER, RECEIVER)
    assert (inbound.service, inbound.service_type) == (PROCESS, "cenbii-procid-ubl")
    assert inbound.action == f"busdox-docid-qns::{DOCUMENT}"
    assert inbound.original_sender == (SCHEME, ORIGINAL_SENDER)
    assert inbound.final_recipient == (SCHEME, FINAL_RECIPIENT)
    document = etree.fromstring(inbound.payload)
    assert document.tag == f"{{{SH}}}StandardBusinessDocument"
    assert c14n(document[1]) == c14n(etree.fromstring(INVOICE))

    exchange.receive_signal(signal)  # raises ReceiptVerificationError if it does not accept

    assert exchange.state == as4.ExchangeState.ACKNOWLEDGED
    assert exchange.successful
    assert len(exchange.receipt.non_repudiated_references) == 3


async def test_as4_reads_our_signed_not_serviced_error(
    parties: Parties, aiohttp_client: Client
) -> None:
    client = await aiohttp_client(corner3(parties, [], serviced=False))
    exchange = as4_sending_exchange(parties)
    headers, body = exchange.build(INVOICE, as4_builder_args())
    exchange.mark_sent()

    response = await client.post("/as4", data=body, headers=headers)
    exchange.receive_signal(await response.read())

    assert exchange.state == as4.ExchangeState.REJECTED
    assert (exchange.error.error_code, exchange.error.error_detail.value) == (
        "EBMS:0004",
        "PEPPOL:NOT_SERVICED",
    )


# --- (b) we send, as4 receives -------------------------------------------------------------


def as4_corner3(parties: Parties, exchanges: list[Any], *, serviced: bool) -> web.Application:
    """``as4``'s receiving side, trusting the test root, answering with its own signal."""
    local = as4_peppol.create_peppol_internal_party(
        RECEIVER, parties.receiver_certificate, as4.AS4LocalPrivateKey(parties.receiver_key)
    )
    policy = as4_peppol.peppol_security_policy(parties.pki.root, intermediates=[parties.pki.ap_ca])

    def accept(participant: str) -> None:
        if not serviced:
            raise as4.ParticipantNotServicedError(participant)

    async def handle(request: web.Request) -> web.Response:
        exchange = as4_peppol.parse_peppol_message(
            request_headers=dict(request.headers),
            request_body=await request.read(),
            local_party=local,
            accept_participant=accept,
            security_policy=policy,
        )
        exchanges.append(exchange)
        headers, signal = exchange.build_signal()
        return web.Response(body=signal, headers=headers)

    app = web.Application()
    app.router.add_post("/as4", handle)
    return app


def our_message(parties: Parties, payload: bytes) -> Any:
    return build_user_message(
        payload=payload,
        message_id=f"{uuid.uuid4()}@fourcorner.test",
        conversation_id=str(uuid.uuid4()),
        timestamp=datetime.now(UTC),
        from_party=SENDER,
        to_party=RECEIVER,
        service=PROCESS,
        service_type="cenbii-procid-ubl",
        action=f"busdox-docid-qns::{DOCUMENT}",
        original_sender=(SCHEME, ORIGINAL_SENDER),
        final_recipient=(SCHEME, FINAL_RECIPIENT),
        sender_key=parties.pki.ap_key,
        sender_certificate=parties.pki.ap_certificate,
        receiver_certificate=parties.receiver_certificate,
    )


async def test_we_send_as4_reads_and_we_accept_its_receipt(
    parties: Parties, aiohttp_client: Client
) -> None:
    exchanges: list[Any] = []
    client = await aiohttp_client(as4_corner3(parties, exchanges, serviced=True))
    payload = sbd()
    sent = our_message(parties, payload)

    response = await client.post("/as4", data=sent.body, headers=sent.http_headers)
    signal = await response.read()

    ((exchange,),) = (exchanges,)
    assert exchange.message.parse_error is None, exchange.message.parse_error.detail
    assert exchange.successful
    assert exchange.message_id == sent.message_id
    assert exchange.remote_party.identity.party_id == SENDER
    assert list(exchange.message.decrypted_data.values()) == [payload]
    assert (exchange.message.sender, exchange.message.recipient) == (
        ORIGINAL_SENDER,
        FINAL_RECIPIENT,
    )
    assert response.status == 200

    receipt = read_signal(
        response.headers["Content-Type"],
        signal,
        sent=sent,
        receiver_certificate=parties.receiver_certificate,
        now=datetime.now(UTC),
    )

    assert isinstance(receipt, Receipt)
    assert receipt.ref_to_message_id == sent.message_id
    assert sorted(receipt.references) == sorted(sent.references)


async def test_we_read_as4s_signed_not_serviced_error(
    parties: Parties, aiohttp_client: Client
) -> None:
    client = await aiohttp_client(as4_corner3(parties, [], serviced=False))
    sent = our_message(parties, sbd())

    response = await client.post("/as4", data=sent.body, headers=sent.http_headers)
    answer = read_signal(
        response.headers["Content-Type"],
        await response.read(),
        sent=sent,
        receiver_certificate=parties.receiver_certificate,
        now=datetime.now(UTC),
    )

    assert isinstance(answer, ErrorSignal)
    assert (answer.code, answer.severity, answer.detail) == (
        "EBMS:0004",
        "failure",
        "PEPPOL:NOT_SERVICED",
    )
    assert answer.ref_to_message_id == sent.message_id


async def test_we_refuse_an_as4_receipt_for_another_message(
    parties: Parties, aiohttp_client: Client
) -> None:
    """The same receipt, checked against a message it does not answer, is refused."""
    client = await aiohttp_client(as4_corner3(parties, [], serviced=True))
    sent, other = our_message(parties, sbd()), our_message(parties, sbd())

    response = await client.post("/as4", data=sent.body, headers=sent.http_headers)
    signal = await response.read()

    with pytest.raises(As4Error) as caught:
        read_signal(
            SIGNAL_CONTENT_TYPE,
            signal,
            sent=other,
            receiver_certificate=parties.receiver_certificate,
            now=datetime.now(UTC),
        )
    assert caught.value.code == "EBMS:0302"


# --- controls: as4 does check what it accepts ---------------------------------------------


def test_control_as4_refuses_our_receipt_once_tampered_or_for_another_signer(
    parties: Parties,
) -> None:
    exchange = as4_sending_exchange(parties)
    headers, body = exchange.build(INVOICE, as4_builder_args())
    inbound = read_user_message(
        headers["Content-Type"],
        body,
        receiver_key=parties.receiver_key,
        receiver_certificate=parties.receiver_certificate,
        check_certificate=parties.check,
        max_payload=1024 * 1024,
        now=datetime.now(UTC),
    )
    signal = build_receipt(
        inbound,
        key=parties.receiver_key,
        certificate=parties.receiver_certificate,
        message_id="receipt-1@fourcorner.test",
        timestamp=datetime.now(UTC),
    )

    with pytest.raises(as4.ReceiptVerificationError, match="digest"):
        as4_peppol.parse_peppol_receipt(
            signal.replace(b"receipt-1@", b"receipt-2@"), parties.receiver_certificate
        )
    with pytest.raises(as4.ReceiptVerificationError, match="signed by"):
        as4_peppol.parse_peppol_receipt(signal, parties.pki.ap_certificate)


def test_control_as4_refuses_our_message_once_tampered(parties: Parties) -> None:
    sent = our_message(parties, sbd())
    local = as4_peppol.create_peppol_internal_party(
        RECEIVER, parties.receiver_certificate, as4.AS4LocalPrivateKey(parties.receiver_key)
    )
    tampered = sent.body.replace(f">{ORIGINAL_SENDER}<".encode(), b">0088:7300010000002<", 1)

    exchange = as4_peppol.parse_peppol_message(
        request_headers=sent.http_headers,
        request_body=tampered,
        local_party=local,
        security_policy=as4_peppol.peppol_security_policy(
            parties.pki.root, intermediates=[parties.pki.ap_ca]
        ),
    )

    assert not exchange.successful
    assert exchange.message.parse_error.error_code == "EBMS:0101"
