"""The receiving side of the AS4 layer works from files for large messages: a message spooled
to disk is read through a memory map exactly as its bytes are, a large SBD is written to a
file as it is decompressed while a small one is held in memory (no file made), gunzipping piece by piece gives what gunzipping whole gives, and an envelope too
large to be one is refused before it is parsed."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from hypothesis import given, settings
from hypothesis import strategies as st

from fourcorner.adapters.as4.compression import OUTPUT_CHUNK, Inflater, decompress
from fourcorner.adapters.as4.envelope import MAX_ENVELOPE_BYTES
from fourcorner.adapters.as4.errors import As4Error
from fourcorner.adapters.as4.service import IN_MEMORY, As4MessageReader
from fourcorner.application.ports import As4Refusal, Credentials
from fourcorner.domain.network_services import Environment

from . import test_as4_messages
from .test_as4_messages import MAX_PAYLOAD, Parties, flip, receive, refused, rewrite, sbd, send

parties = test_as4_messages.parties  # the suite's fixture: its PKI and corner 3's certificate


def reader(parties: Parties) -> tuple[As4MessageReader, Credentials]:
    pem = serialization.Encoding.PEM
    credentials = Credentials(
        parties.receiver_certificate.public_bytes(pem).decode(),
        parties.receiver_key.private_bytes(
            pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode(),
    )
    return As4MessageReader(parties.check, max_payload=MAX_PAYLOAD), credentials


def test_a_spooled_message_reads_as_its_bytes(parties: Parties, tmp_path: Path) -> None:
    payload = sbd(300_000)
    sent = send(parties, payload)
    body, out = tmp_path / "message", tmp_path / "sbd"
    body.write_bytes(sent.body)
    read, credentials = reader(parties)

    inbound = read.read(sent.content_type, body, credentials, lambda: out)

    assert inbound.sbd == out and out.read_bytes() == payload
    assert inbound.message_id == receive(parties, sent.content_type, sent.body).message_id


@pytest.mark.parametrize("size", [10_000, IN_MEMORY - 1000])
def test_a_small_sbd_is_held_in_memory(parties: Parties, tmp_path: Path, size: int) -> None:
    payload = sbd(size)
    sent = send(parties, payload)
    read, credentials = reader(parties)
    made: list[Path] = []

    def file() -> Path:
        made.append(tmp_path / "sbd")
        return made[-1]

    inbound = read.read(sent.content_type, sent.body, credentials, file)

    assert (inbound.sbd, made) == (payload, [])
    assert inbound.message_id == receive(parties, sent.content_type, sent.body).message_id


@pytest.mark.parametrize(
    ("edit", "code"),
    [
        (lambda a: flip(a, len(a) // 2), "EBMS:0102"),  # the ciphertext: its tag fails
        (lambda a: a[:20], "EBMS:0102"),  # cut short
    ],
)
def test_a_spooled_message_is_refused_as_its_bytes_are(
    parties: Parties, tmp_path: Path, edit: Callable[[bytes], bytes], code: str
) -> None:
    content_type, data = rewrite(send(parties), attachment=edit)
    body = tmp_path / "message"
    body.write_bytes(data)
    read, credentials = reader(parties)

    with pytest.raises(As4Refusal) as caught:
        read.read(content_type, body, credentials, lambda: tmp_path / "sbd")

    assert caught.value.code == code
    refused(code, lambda: receive(parties, content_type, data))


def test_the_receiving_access_points_environment_decides_whom_it_trusts(
    parties: Parties, tmp_path: Path
) -> None:
    """A sender is checked against the trust of the receiving access point's environment:
    here PROD trusts no one, so the message that TEST reads is refused at PROD (EBMS:0101)."""
    sent = send(parties)
    body = tmp_path / "message"
    body.write_bytes(sent.body)
    _, credentials = reader(parties)

    def nobody(cert: x509.Certificate) -> None:
        raise ValueError("not issued by the PROD AP CA")

    read = As4MessageReader(
        parties.check, max_payload=MAX_PAYLOAD, environment_checks={Environment.PROD: nobody}
    )
    at_test = attrs.evolve(credentials, environment=Environment.TEST)
    assert read.read(sent.content_type, body, at_test, lambda: tmp_path / "sbd").message_id
    at_prod = attrs.evolve(credentials, environment=Environment.PROD)
    with pytest.raises(As4Refusal) as caught:
        read.read(sent.content_type, body, at_prod, lambda: tmp_path / "sbd")
    assert caught.value.code == "EBMS:0101" and "PROD AP CA" in caught.value.detail


def test_an_empty_spooled_message_is_refused(parties: Parties, tmp_path: Path) -> None:
    body = tmp_path / "message"
    body.write_bytes(b"")
    read, credentials = reader(parties)

    with pytest.raises(As4Refusal) as caught:
        read.read("multipart/related; boundary=b", body, credentials, lambda: tmp_path / "sbd")

    assert caught.value.code == "EBMS:0007"


def test_an_envelope_too_large_to_be_one_is_refused_unparsed(parties: Parties) -> None:
    sent = send(parties)
    padding = b" " * MAX_ENVELOPE_BYTES  # blanks after the XML declaration: well-formed XML
    content_type, body = rewrite(sent, soap=lambda s: s.replace(b"?>", b"?>" + padding, 1))

    error = refused("EBMS:0009", lambda: receive(parties, content_type, body))

    assert "larger than" in error.detail


# --- gunzip, whole and piece by piece ------------------------------------------------------

members = st.lists(
    st.one_of(st.binary(max_size=3000), st.integers(0, 3_000_000).map(lambda n: b"a" * n)),
    min_size=1,
    max_size=3,
)


@settings(max_examples=60, deadline=None)
@given(parts=members, piece=st.integers(1, 70_000), slack=st.integers(-2, 2))
def test_inflating_piece_by_piece_is_gunzip_under_the_cap(
    parts: list[bytes], piece: int, slack: int
) -> None:
    data = b"".join(gzip.compress(p, mtime=0) for p in parts)
    whole = b"".join(parts)
    cap = max(0, len(whole) + slack)
    out: list[bytes] = []
    inflater = Inflater(cap, out.append)

    def run() -> None:
        for at in range(0, len(data), piece):
            inflater.feed(data[at : at + piece])
        inflater.close()

    if len(whole) > cap:
        with pytest.raises(As4Error, match="more than"):
            run()
        return
    run()
    assert b"".join(out) == whole == decompress(data, cap)
    assert all(0 < len(o) <= OUTPUT_CHUNK for o in out)


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (gzip.compress(b"x" * 1000) + b"junk!", "not a gzip stream"),
        (gzip.compress(b"x" * 1000)[:-3], "cut short"),
        (b"", "cut short"),
        (zlib.compress(b"not gzip"), "not a gzip stream"),
    ],
)
def test_what_is_not_one_whole_gzip_stream_is_refused(data: bytes, problem: str) -> None:
    with pytest.raises(As4Error, match=problem) as caught:
        decompress(data, 10_000)
    assert caught.value.code == "EBMS:0303"
