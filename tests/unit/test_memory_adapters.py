"""The in-memory network adapters on their own: the loopback's wire form and the participant
lookup. (``test_loop_in_memory`` runs them with the use cases.)"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fourcorner.adapters.memory import InMemoryMessageReader, InMemoryParticipantLookup
from fourcorner.adapters.memory.loopback import CONTENT_TYPE, Header
from fourcorner.adapters.pki import ensure_test_pki
from fourcorner.application.ports import (
    REFUSAL_DETAIL,
    As4Refusal,
    Credentials,
    Endpoint,
    LookupFailed,
    LookupProblem,
)
from fourcorner.domain.envelope import Identifier
from fourcorner.domain.network_services import Environment
from sbd_factory import BILLING_PROCESS, INVOICE, PARTICIPANT_SCHEME, PROCESS_SCHEME, RECEIVER

SEAT = "POP000202"
PROCESS = Identifier(PROCESS_SCHEME, BILLING_PROCESS)


@pytest.fixture(scope="module")
def credentials(tmp_path_factory: Any) -> Credentials:
    """The AP certificate and key of a test PKI made for ``SEAT``, once."""
    data = tmp_path_factory.mktemp("pki")
    ensure_test_pki(data, seat_id=SEAT)
    pki = data / "pki"
    return Credentials((pki / "ap.pem").read_text(), (pki / "ap.key").read_text())


texts = st.text(st.characters(codec="utf-8"), max_size=40)
pairs = st.tuples(texts, texts)


@st.composite
def messages(draw: st.DrawFn) -> tuple[Header, bytes]:
    payload = draw(st.binary(max_size=600))
    header = Header(
        message_id=draw(texts),
        from_party=draw(texts),
        to_party=SEAT,
        receiver_certificate_sha256=draw(st.from_regex(r"[0-9a-f]{64}", fullmatch=True)),
        original_sender=draw(pairs),
        final_recipient=draw(pairs),
        service=draw(pairs),
        action=draw(texts),
        payload_sha256=hashlib.sha256(payload).hexdigest(),
    )
    return header, payload


@settings(max_examples=60, deadline=None)
@given(message=messages())
def test_a_loopback_message_reads_back_as_it_was_sent(
    credentials: Credentials, message: tuple[Header, bytes]
) -> None:
    header, payload = message
    reader = InMemoryMessageReader()
    with tempfile.TemporaryDirectory() as folder:
        body, sbd = Path(folder) / "body", Path(folder) / "sbd"
        body.write_bytes(header.dump(payload))
        inbound = reader.read(CONTENT_TYPE, body, credentials, lambda: sbd)
        assert inbound.sbd == payload
    assert inbound.message_id == header.message_id
    assert inbound.sender_certificate_cn == header.from_party
    assert inbound.original_sender == Identifier(*header.original_sender)
    assert inbound.final_recipient == Identifier(*header.final_recipient)
    assert inbound.service == Identifier(*header.service)
    assert inbound.action == header.action
    assert reader.read_messages == [inbound]


@settings(max_examples=60, deadline=None)
@given(message=messages(), data=st.data())
def test_a_cut_short_loopback_message_is_refused(
    credentials: Credentials, message: tuple[Header, bytes], data: st.DataObject
) -> None:
    """Every proper prefix of a message is refused with an ebMS error, never read."""
    header, payload = message
    whole = header.dump(payload)
    cut = data.draw(st.integers(0, len(whole) - 1))
    with tempfile.TemporaryDirectory() as folder:
        body, sbd = Path(folder) / "body", Path(folder) / "sbd"
        body.write_bytes(whole[:cut])
        with pytest.raises(As4Refusal) as caught:
            InMemoryMessageReader().read(CONTENT_TYPE, body, credentials, lambda: sbd)
    assert caught.value.code == "EBMS:0009"


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 20_000))
def test_a_refusal_repeats_at_most_its_bound_of_what_was_sent(
    credentials: Credentials, length: int
) -> None:
    """A refusal's detail goes back to the sender and into the log: cut at
    ``REFUSAL_DETAIL`` characters, whatever it quotes (here a content type of any length)."""
    content_type = "text/" + "x" * length
    reader = InMemoryMessageReader()
    with pytest.raises(As4Refusal) as caught:
        reader.read(content_type, b"", credentials, lambda: Path("unused"))
    detail = caught.value.detail
    assert len(detail) <= REFUSAL_DETAIL
    assert content_type in detail or detail.endswith("…")
    assert len(reader.error(caught.value, credentials)) < 2 * REFUSAL_DETAIL


async def test_the_lookup_answers_what_a_send_would_meet() -> None:
    lookup = InMemoryParticipantLookup()
    bob = Identifier(PARTICIPANT_SCHEME, RECEIVER)
    endpoint = Endpoint("memory://b", b"not a certificate", "peppol-transport-as4-v2_0", "PB")
    lookup.register(bob, endpoint, [(INVOICE, PROCESS)])
    found = await lookup.receiver(bob, INVOICE, Environment.TEST)
    assert found.registered and found.can_receive
    assert [e.url for e in found.endpoints] == ["memory://b"]
    assert found.document_types == (str(INVOICE),)
    other = await lookup.receiver(bob, INVOICE, Environment.PROD)
    assert not other.registered and not other.can_receive
    lookup.fail(bob, LookupProblem.UNREACHABLE)
    with pytest.raises(LookupFailed) as caught:
        await lookup.endpoint(bob, INVOICE, PROCESS, endpoint.transport_profile, Environment.TEST)
    assert caught.value.problem is LookupProblem.UNREACHABLE and not caught.value.permanent
    lookup.heal(bob)
    assert (
        await lookup.endpoint(bob, INVOICE, PROCESS, endpoint.transport_profile, Environment.TEST)
        == endpoint
    )
    assert len(lookup.asked) == 4
