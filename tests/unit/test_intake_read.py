"""Intake's first read of a document held in memory (``application.intake._read``): an SBD
is parsed once, and what the SBD reader refuses is still tried as a bare UBL document, with
the same answers as when ``read_bare`` is asked first."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from fourcorner.adapters.codelists import load_catalogue
from fourcorner.adapters.sbdh.port import SbdhEnvelopes
from fourcorner.application import intake
from fourcorner.domain.errors import InvalidInput
from fourcorner.domain.ubl import MlsRequest
from sbd_factory import BASE_EXAMPLE, SENDER, make_sbd


class Counted(SbdhEnvelopes):
    """The SBDH port, naming each read it is asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    def read(self, data: bytes) -> Any:
        self.asked.append("read")
        return super().read(data)

    def read_bare(self, data: bytes) -> Any:
        self.asked.append("read_bare")
        return super().read_bare(data)


def read(data: bytes) -> tuple[Any, bool, list[str]]:
    envelopes = Counted()
    ctx = SimpleNamespace(
        catalogue=load_catalogue(), new_id=uuid.uuid4, clock=lambda: datetime.now(UTC)
    )
    docs = SimpleNamespace(envelopes=envelopes)
    envelope, built, _ = intake._read(ctx, docs, data, MlsRequest())  # type: ignore[arg-type]
    return envelope, built, envelopes.asked


def test_an_sbd_is_parsed_once() -> None:
    envelope, built, asked = read(make_sbd())
    assert (envelope.sender.value, built, asked) == (SENDER, False, ["read"])


def test_a_bare_document_naming_the_sbd_root_early_is_wrapped_all_the_same() -> None:
    data = BASE_EXAMPLE.read_bytes()
    declaration = data.index(b"?>") + 2
    named = data[:declaration] + b"<!-- not a StandardBusinessDocument -->" + data[declaration:]
    envelope, built, asked = read(named)
    assert built and asked == ["read", "read_bare", "read"]
    plain, _, plainly = read(data)
    assert envelope.sender == plain.sender and envelope.receiver == plain.receiver
    assert plainly == ["read_bare", "read"]  # one that does not is asked for its facts first


def test_an_sbd_the_reader_refuses_is_refused_in_its_words() -> None:
    sbd = make_sbd().replace(b"<sh:HeaderVersion>1.0</sh:HeaderVersion>", b"")
    with pytest.raises(InvalidInput) as refused:
        read(sbd)
    with pytest.raises(InvalidInput) as directly:
        SbdhEnvelopes().read(sbd)
    assert refused.value.problems == directly.value.problems
