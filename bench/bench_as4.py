"""The AS4 message layer (``adapters.as4``) against the PyPI package ``as4`` in the same run.

Run by hand: ``.venv/bin/python bench/bench_as4.py [--seconds S] [--sizes 10000,100000]``
(needs ``pip install as4``, a test-only dependency). For SBDs of 10 KB, 100 KB and 1 MB it
times, for each implementation on its own messages:

- ``build``: the sender builds the signed, encrypted multipart message;
- ``receive``: the receiver parses, verifies, decrypts and decompresses it and builds the
  signed receipt;
- ``receipt``: the sender verifies the receipt (signature, RefToMessageId, NRI digests).

``as4`` wraps a bare document in its own SBDH, so it gets the document inside our SBD and its
SBD ends up the same size give or take the header. Its receiver also validates the SBDH
against the schema, which ours leaves to the application layer. Each figure is the median of
repeated runs; the ratio is ours / theirs (target ≤ 1.0).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from fourcorner.adapters.as4 import (
    build_receipt,
    build_user_message,
    read_signal,
    read_user_message,
)
from fourcorner.adapters.pki import TestPki, ensure_test_pki, issue_leaf

try:
    import as4
    import as4.peppol as as4_peppol
except ImportError as e:
    raise SystemExit("bench_as4 needs the as4 package: .venv/bin/pip install as4") from e

SIZES = (10_000, 100_000, 1_000_000)
SENDER, RECEIVER = "PFC000001", "PFC000002"
SCHEME = "iso6523-actorid-upis"
DOCUMENT = (
    "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2::Invoice"
    "##urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0::2.1"
)
PROCESS = "urn:fdc:peppol.eu:2017:poacc:billing:01:1.0"
ORIGINAL_SENDER, FINAL_RECIPIENT = "0088:7300010000001", "0088:5790000435975"
SH = "http://www.unece.org/cefact/namespaces/StandardBusinessDocumentHeader"


def invoice(size: int) -> bytes:
    """A UBL-looking document of about ``size`` bytes, varied enough not to compress to nothing."""
    head = b'<Invoice xmlns="urn:oasis:names:specification:ubl:schema:xsd:Invoice-2">'
    line = b"<InvoiceLine><ID>%d</ID><Note>%s</Note><Amount>%d.%02d</Amount></InvoiceLine>"
    lines, total, i = [], len(head) + 10, 0
    while total < size:
        item = line % (i, uuid.UUID(int=i * 7919).hex.encode(), i * 37 % 1000, i % 100)
        lines.append(item)
        total += len(item)
        i += 1
    return head + b"".join(lines) + b"</Invoice>"


def sbd(document: bytes) -> bytes:
    return (
        (
            f'<StandardBusinessDocument xmlns="{SH}"><StandardBusinessDocumentHeader>'
            "<HeaderVersion>1.0</HeaderVersion>"
            f'<Sender><Identifier Authority="{SCHEME}">{ORIGINAL_SENDER}</Identifier></Sender>'
            f'<Receiver><Identifier Authority="{SCHEME}">{FINAL_RECIPIENT}</Identifier>'
            "</Receiver><DocumentIdentification>"
            "<Standard>urn:oasis:names:specification:ubl:schema:xsd:Invoice-2</Standard>"
            f"<TypeVersion>2.1</TypeVersion><InstanceIdentifier>{uuid.uuid4()}"
            "</InstanceIdentifier><Type>Invoice</Type>"
            "<CreationDateAndTime>2026-01-02T10:00:00Z</CreationDateAndTime>"
            "</DocumentIdentification><BusinessScope>"
            f"<Scope><Type>DOCUMENTID</Type><InstanceIdentifier>{DOCUMENT}</InstanceIdentifier>"
            "<Identifier>busdox-docid-qns</Identifier></Scope>"
            f"<Scope><Type>PROCESSID</Type><InstanceIdentifier>{PROCESS}</InstanceIdentifier>"
            "<Identifier>cenbii-procid-ubl</Identifier></Scope>"
            "<Scope><Type>COUNTRY_C1</Type><InstanceIdentifier>BE</InstanceIdentifier></Scope>"
            "</BusinessScope></StandardBusinessDocumentHeader>"
        ).encode()
        + document
        + b"</StandardBusinessDocument>"
    )


def timed(operation: Callable[[], object], seconds: float) -> float:
    """The median time of ``operation`` in milliseconds, over at least 5 runs and ``seconds``."""
    operation()  # warm up
    times: list[float] = []
    deadline = time.perf_counter() + seconds
    while len(times) < 5 or time.perf_counter() < deadline:
        start = time.perf_counter()
        operation()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


class Ours:
    def __init__(self, pki: TestPki, receiver: Any, receiver_key: Any, payload: bytes) -> None:
        self.pki, self.receiver, self.receiver_key, self.payload = (
            pki,
            receiver,
            receiver_key,
            payload,
        )
        self.sent = self.build()
        self.signal = self.receive()

    def build(self) -> Any:
        return build_user_message(
            payload=self.payload,
            message_id=f"{uuid.uuid4()}@fourcorner.bench",
            conversation_id="bench",
            timestamp=datetime.now(UTC),
            from_party=SENDER,
            to_party=RECEIVER,
            service=PROCESS,
            service_type="cenbii-procid-ubl",
            action=f"busdox-docid-qns::{DOCUMENT}",
            original_sender=(SCHEME, ORIGINAL_SENDER),
            final_recipient=(SCHEME, FINAL_RECIPIENT),
            sender_key=self.pki.ap_key,
            sender_certificate=self.pki.ap_certificate,
            receiver_certificate=self.receiver,
        )

    def receive(self) -> bytes:
        inbound = read_user_message(
            self.sent.content_type,
            self.sent.body,
            receiver_key=self.receiver_key,
            receiver_certificate=self.receiver,
            check_certificate=lambda _: None,
            max_payload=16 * 1024 * 1024,
            now=datetime.now(UTC),
        )
        return build_receipt(
            inbound,
            key=self.receiver_key,
            certificate=self.receiver,
            message_id=f"{uuid.uuid4()}@fourcorner.bench",
            timestamp=datetime.now(UTC),
        )

    def receipt(self) -> object:
        return read_signal(
            "application/soap+xml; charset=utf-8",
            self.signal,
            sent=self.sent,
            receiver_certificate=self.receiver,
            now=datetime.now(UTC),
        )


class Theirs:
    def __init__(self, pki: TestPki, receiver: Any, receiver_key: Any, document: bytes) -> None:
        self.document = document
        self.local = as4_peppol.create_peppol_internal_party(
            SENDER, pki.ap_certificate, as4.AS4LocalPrivateKey(pki.ap_key)
        )
        self.remote = as4_peppol.create_peppol_external_party(RECEIVER, receiver)
        self.receiver_party = as4_peppol.create_peppol_internal_party(
            RECEIVER, receiver, as4.AS4LocalPrivateKey(receiver_key)
        )
        self.policy = as4_peppol.peppol_security_policy(pki.root, intermediates=[pki.ap_ca])
        self.exchange, self.headers, self.body = self.build()
        self.signal = self.receive()

    def build(self) -> tuple[Any, dict[str, str], bytes]:
        exchange = as4_peppol.PeppolSendingExchange(
            profile=as4_peppol.PeppolAS4Profile, local_party=self.local, remote_party=self.remote
        )
        arguments = as4_peppol.PeppolAS4MessageBuilderArgs(
            sender=ORIGINAL_SENDER,
            recipient=FINAL_RECIPIENT,
            document_type_identifier=as4_peppol.BusdoxDocidQnsDocumentIdentifier.from_identifier_value(
                DOCUMENT
            ),
            document_identification_instance_identifier=str(uuid.uuid4()),
            process_identifier=PROCESS,
            c1_country_id="BE",
        )
        headers, body = exchange.build(self.document, arguments)
        exchange.mark_sent()
        return exchange, headers, body

    def receive(self) -> bytes:
        exchange = as4_peppol.parse_peppol_message(
            request_headers=self.headers,
            request_body=self.body,
            local_party=self.receiver_party,
            security_policy=self.policy,
        )
        if not exchange.successful:
            raise SystemExit(f"as4 refused its own message: {exchange.message.parse_error}")
        _, signal = exchange.build_signal()
        return bytes(signal)

    def receipt(self) -> object:
        self.exchange.state = as4.ExchangeState.SENT
        return self.exchange.receive_signal(self.signal)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="time per figure")
    parser.add_argument("--sizes", default=",".join(str(s) for s in SIZES))
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-as4-") as directory:
        pki = ensure_test_pki(Path(directory))
        now = datetime.now(UTC)
        receiver, _ = issue_leaf(
            pki.ap_ca,
            pki.ap_ca_key,
            RECEIVER,
            not_before=now - timedelta(hours=1),
            not_after=now + timedelta(days=1),
            key=pki.smp_key,
        )
        print(f"{'SBD':>9} {'operation':<9} {'ours ms':>9} {'as4 ms':>9} {'ours/as4':>9}")
        for size in (int(s) for s in arguments.sizes.split(",")):
            document = invoice(size - len(sbd(b"")))
            ours = Ours(pki, receiver, pki.smp_key, sbd(document))
            theirs = Theirs(pki, receiver, pki.smp_key, document)
            for name in ("build", "receive", "receipt"):
                mine = timed(getattr(ours, name), arguments.seconds)
                other = timed(getattr(theirs, name), arguments.seconds)
                label = f"{len(ours.payload) / 1000:.0f} KB"
                print(f"{label:>9} {name:<9} {mine:9.2f} {other:9.2f} {mine / other:9.2f}")


if __name__ == "__main__":
    main()
