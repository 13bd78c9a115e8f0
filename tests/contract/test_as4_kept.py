"""The message a sender keeps between the attempts of a send (``adapters.as4.kept``): it reads
back as it was written, anything else reads as "not kept", and a retry from it posts the very
bytes of the first attempt, so the receipt the receiver stored for them checks out. A message
built again (new Timestamp, new key) does not match that receipt: that is why it is kept."""

from __future__ import annotations

import asyncio
from typing import Any

import attrs
from aiohttp import web
from cryptography.hazmat.primitives import serialization
from hypothesis import given
from hypothesis import strategies as st

from fourcorner.adapters.as4 import SIGNAL_CONTENT_TYPE, OutboundMessage, SignedReference, service
from fourcorner.adapters.as4.kept import KeptMessage, dump, load
from fourcorner.adapters.as4.service import As4Transport
from fourcorner.application.ports import Credentials, Delivered, Endpoint, Refused
from fourcorner.domain.envelope import Addressing
from sbd_factory import make_envelope, make_sbd

from .test_as4_messages import Parties, parties, receipt_for, receive

__all__ = ["parties"]

texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
references = st.builds(SignedReference, texts, st.lists(texts, max_size=3).map(tuple), texts, texts)
kept_messages = st.builds(
    KeptMessage,
    message=st.builds(
        OutboundMessage,
        content_type=texts,
        body=st.binary(max_size=2000),
        message_id=texts,
        references=st.lists(references, max_size=4).map(tuple),
    ),
    receiver_certificate=st.binary(max_size=300),
    sender_party=texts,
    receiver_party=texts,
)


@given(kept_messages)
def test_a_kept_message_reads_back_as_it_was(kept: KeptMessage) -> None:
    assert load(dump(kept)) == kept


@given(st.binary(max_size=400))
def test_anything_else_reads_as_not_kept(data: bytes) -> None:
    found = load(data)
    assert found is None or dump(found) == data


@given(kept_messages, st.integers(0, 400))
def test_a_cut_header_reads_as_not_kept(kept: KeptMessage, at: int) -> None:
    data = dump(kept)
    header = data.index(b"\n")
    assert load(data[: min(at, header)]) is None


def _credentials(parties: Parties) -> Credentials:
    cert = parties.pki.ap_certificate.public_bytes(serialization.Encoding.PEM).decode()
    key = parties.pki.ap_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    return Credentials(cert, key)


async def test_a_retry_posts_the_kept_bytes_and_the_stored_receipt_checks_out(
    parties: Parties, aiohttp_server: Any
) -> None:
    stored: dict[str, bytes] = {}
    posted: list[bytes] = []

    async def as4(request: web.Request) -> web.Response:
        """A receiver that stores the first message, loses its answer, and answers every
        later post of that MessageId with the receipt it stored."""
        body = await request.read()
        posted.append(body)
        inbound = receive(parties, request.headers["Content-Type"], body)
        if inbound.message_id not in stored:
            stored[inbound.message_id] = receipt_for(parties, inbound)
            assert request.transport is not None
            request.transport.abort()
            return web.Response(status=204)
        return web.Response(
            body=stored[inbound.message_id], headers={"Content-Type": SIGNAL_CONTENT_TYPE}
        )

    app = web.Application()
    app.router.add_post("/as4", as4)
    server = await aiohttp_server(app)
    endpoint = _endpoint(parties, str(server.make_url("/as4")))
    arguments = _arguments(parties, endpoint=endpoint, message_id="tx-1@fourcorner")
    transport = As4Transport()
    try:
        first = await transport.prepare(**arguments)
        assert not first.reused
        assert (first.sender_party, first.receiver_party) == ("PFC000001", "PFC000002")
        lost = await transport.send(first, endpoint)
        assert isinstance(lost, Refused) and lost.retryable

        again = await transport.prepare(**arguments, kept=first.data)
        assert again.reused and again.data == first.data
        delivered = await transport.send(again, endpoint)
        assert isinstance(delivered, Delivered), delivered
        assert delivered.receipt == stored["tx-1@fourcorner"]
        assert posted[0] == posted[1]

        rebuilt = await transport.prepare(**arguments)  # what a retry did before
        refused = await transport.send(rebuilt, endpoint)
        assert isinstance(refused, Refused) and refused.bad_receipt
    finally:
        await transport.aclose()


def _endpoint(parties: Parties, url: str = "http://127.0.0.1:9/as4") -> Endpoint:
    """The receiving access point at ``url``, with the receiver's certificate."""
    return Endpoint(
        url,
        parties.receiver_certificate.public_bytes(serialization.Encoding.DER),
        "net-transport-as4-v2_0",
    )


def _arguments(parties: Parties, **more: Any) -> dict[str, Any]:
    """``As4Transport.prepare``'s arguments for a new SBD sent as the sender, and ``more``."""
    return {
        "sbd": make_sbd(),
        "addressing": Addressing.of(make_envelope()),
        "credentials": _credentials(parties),
        **more,
    }


async def test_a_message_kept_for_another_endpoint_or_id_is_built_anew(parties: Parties) -> None:
    endpoint = _endpoint(parties)
    moved = Endpoint(
        endpoint.url,
        parties.pki.ap_certificate.public_bytes(serialization.Encoding.DER),
        endpoint.transport_profile,
    )
    arguments = _arguments(parties)
    transport = As4Transport()
    kept = (await transport.prepare(**arguments, endpoint=endpoint, message_id="a@fc")).data
    for other in (
        {"endpoint": moved, "message_id": "a@fc"},  # the receiver's certificate changed
        {"endpoint": endpoint, "message_id": "b@fc"},
    ):
        fresh = await transport.prepare(**arguments, **other, kept=kept)
        assert not fresh.reused and fresh.data != kept
    garbled = await transport.prepare(
        **arguments, endpoint=endpoint, message_id="a@fc", kept=b"not kept"
    )
    assert not garbled.reused
    await transport.aclose()


async def test_a_small_message_is_built_inline_a_large_one_in_a_thread(
    parties: Parties, monkeypatch: Any
) -> None:
    """A thread hop costs more than building the message of a usual SBD: only one larger
    than ``INLINE_BUILD`` is built in a worker thread. Both read the same on the other side."""
    hops: list[object] = []
    to_thread = asyncio.to_thread

    async def counted(func: Any, /, *args: Any, **kwargs: Any) -> Any:
        hops.append(func)
        return await to_thread(func, *args, **kwargs)

    monkeypatch.setattr(service.asyncio, "to_thread", counted)
    endpoint = _endpoint(parties)
    arguments = _arguments(parties, endpoint=endpoint, message_id="a@fc")
    sbd = arguments["sbd"]
    transport = As4Transport()
    inline = await transport.prepare(**arguments)
    assert not hops
    monkeypatch.setattr(service, "INLINE_BUILD", len(sbd) - 1)
    threaded = await transport.prepare(**arguments)
    assert len(hops) == 1
    for prepared in (inline, threaded):
        kept = load(prepared.data)
        assert kept is not None and prepared.opaque == kept
        inbound = receive(parties, kept.message.content_type, kept.message.body)
        assert inbound.message_id == "a@fc"
    await transport.aclose()


async def test_the_parties_certificates_are_read_once_for_the_same_bytes(
    parties: Parties,
) -> None:
    """Every send reads the certificate the SMP publishes for the endpoint (and checks the
    answer against it) and its own: read once for the same bytes, the same parties named."""
    endpoint = _endpoint(parties)
    arguments = _arguments(parties, endpoint=endpoint)
    transport = As4Transport()
    first = await transport.prepare(**arguments, message_id="a@fc")
    hits = service._party.cache_info().hits, service._own_party.cache_info().hits
    again = await transport.prepare(
        **{
            **arguments,
            "endpoint": attrs.evolve(endpoint, certificate_der=bytes(endpoint.certificate_der)),
        },
        message_id="b@fc",
    )
    assert service._party.cache_info().hits > hits[0]
    assert service._own_party.cache_info().hits > hits[1]
    assert (again.sender_party, again.receiver_party) == (first.sender_party, first.receiver_party)
    assert (first.sender_party, first.receiver_party) == ("PFC000001", "PFC000002")
    await transport.aclose()
