"""The ``Envelopes`` adapter's reads of SBDs held in memory (``SbdhEnvelopes.read``): the
envelopes of the SBDs one adapter read last are kept, up to a bound in bytes, the least
recently read out first, and given again for the very same bytes only; a refusal is raised
at every read; a file is read each time."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fourcorner.adapters.sbdh import port
from fourcorner.adapters.sbdh.port import SbdhEnvelopes
from fourcorner.adapters.sbdh.reader import read_envelope
from fourcorner.domain.envelope import Sbdh
from fourcorner.domain.errors import InvalidInput
from fourcorner.entrypoints.harness import strategies as hs
from sbd_factory import make_sbd

_VERSION = b"<sh:HeaderVersion>1.0</sh:HeaderVersion>"


@contextmanager
def parses() -> Iterator[list[bytes]]:
    """The documents the adapter parses while in the block, in order."""
    parsed: list[bytes] = []

    def counted(data: bytes) -> Sbdh:
        parsed.append(data)
        return read_envelope(data)

    with mock.patch.object(port, "read_envelope", counted):
        yield parsed


def kept_size(envelopes: SbdhEnvelopes) -> int:
    return sum(len(data) for data in envelopes._kept)


def test_an_sbd_read_again_is_not_parsed_again() -> None:
    """As a document sent to one of this service's own access points arrives: the envelope
    read at intake is the one read again, by the same adapter only; a refusal is not kept."""
    envelopes, other = SbdhEnvelopes(), SbdhEnvelopes()
    sbd = make_sbd()
    refused = sbd.replace(_VERSION, b"")
    with parses() as parsed:
        first = envelopes.read(sbd)
        assert envelopes.read(bytes(bytearray(sbd))) is first  # equal bytes, another object
        assert parsed == [sbd]
        assert other.read(sbd) == first and len(parsed) == 2
        errors = []
        for _ in range(2):
            with pytest.raises(InvalidInput) as e:
                envelopes.read(refused)
            errors.append(e.value)
        assert parsed[2:] == [refused, refused]
    assert errors[0] is not errors[1] and errors[0].problems == errors[1].problems
    assert kept_size(envelopes) == len(sbd)


def test_only_the_envelopes_of_the_sbds_read_last_are_kept() -> None:
    documents = [make_sbd() for _ in range(4)]
    envelopes = SbdhEnvelopes(kept_bytes=sum(len(d) for d in documents[1:]))
    with parses() as parsed:
        for sbd in documents:
            envelopes.read(sbd)
        envelopes.read(documents[-1])
        envelopes.read(documents[1])
        assert parsed == documents
        envelopes.read(documents[0])  # out first, then back in place of documents[2]
        assert parsed == [*documents, documents[0]]
        envelopes.read(documents[1])
        envelopes.read(documents[2])
        assert parsed == [*documents, documents[0], documents[2]]


def test_a_document_larger_than_the_bound_is_not_kept_nor_pushes_others_out() -> None:
    small, large = make_sbd(), make_sbd(pad_to=20_000)
    envelopes = SbdhEnvelopes(kept_bytes=len(large) - 1)
    with parses() as parsed:
        for sbd in (small, large, large, small):
            envelopes.read(sbd)
    assert parsed == [small, large, large]
    assert kept_size(envelopes) == len(small)


def test_a_file_is_read_each_time(tmp_path: Path) -> None:
    envelopes = SbdhEnvelopes()
    sbd = make_sbd()
    path = tmp_path / "sbd.xml"
    path.write_bytes(sbd)
    first = envelopes.read_file(path)
    assert envelopes.read_file(path) is not first and envelopes.read(sbd) is not first
    assert kept_size(envelopes) == len(sbd)  # the bytes only


def test_what_is_not_bytes_itself_is_read_and_not_kept() -> None:
    envelopes = SbdhEnvelopes()
    sbd = make_sbd()
    assert envelopes.read(bytearray(sbd)) == envelopes.read(sbd)  # type: ignore[arg-type]
    assert kept_size(envelopes) == len(sbd)


def _outcome(read: Any, data: bytes) -> Sbdh | list[tuple[str, str]]:
    try:
        return read(data)  # type: ignore[no-any-return]
    except InvalidInput as e:
        return [(d.field, d.problem) for d in e.problems]


@st.composite
def _documents(draw: st.DrawFn) -> bytes:
    """An SBD or MLS SBD, whole or cut short or without its header version (refused)."""
    sbd = draw(st.one_of(hs.sbds(), hs.mls_documents()))
    change = draw(st.sampled_from(["whole", "whole", "cut", "unversioned"]))
    if change == "cut":
        return sbd[: draw(st.integers(0, len(sbd) - 1))]
    if change == "unversioned":
        return sbd.replace(_VERSION, b"")
    return sbd


@settings(max_examples=60)
@given(
    st.lists(_documents(), min_size=1, max_size=4, unique=True),
    st.lists(st.integers(0, 3), min_size=1, max_size=12),
    st.integers(0, 40_000),
)
def test_a_kept_read_answers_as_a_fresh_one(
    pool: list[bytes], order: list[int], bound: int
) -> None:
    """Whatever is read, in whatever order, the adapter answers as a fresh read of the same
    bytes would, keeps no more bytes than its bound, and parses again exactly what the least
    recently read documents that fit in it do not hold (a model of what is kept)."""
    envelopes = SbdhEnvelopes(kept_bytes=bound)
    model: list[bytes] = []  # what should be kept, least recently read first
    with parses() as parsed:
        for i in order:
            data = bytes(bytearray(pool[i % len(pool)]))  # equal bytes, another object
            expected = _outcome(read_envelope, data)
            before = len(parsed)
            assert _outcome(envelopes.read, data) == expected
            assert len(parsed) - before == (0 if data in model else 1)
            if data in model:
                model.remove(data)
            if not isinstance(expected, list) and len(data) <= bound:  # nor a refusal
                model.append(data)
                while sum(map(len, model)) > bound:
                    model.pop(0)
            assert list(envelopes._kept) == model
            assert kept_size(envelopes) == envelopes._kept_size <= bound
