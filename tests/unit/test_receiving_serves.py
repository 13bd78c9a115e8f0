"""Which received documents a participant takes (``receiving.serves``): a document type it
announced exactly, or one its wildcard registration covers (``domain.wildcard``), for the
process it announced."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from fourcorner.adapters.codelists import load_catalogue
from fourcorner.adapters.memory import InMemoryStorage
from fourcorner.adapters.system import random_id, system_clock_ns
from fourcorner.application.context import Context
from fourcorner.application.receiving import serves
from fourcorner.domain.envelope import Identifier, Sbdh
from fourcorner.domain.network_services import Environment
from fourcorner.domain.organisation import UserRef
from fourcorner.domain.participant import Participant, SupportedDocumentType

T0 = datetime(2026, 1, 2, tzinfo=UTC)
CATALOGUE = load_catalogue()
JP = next(
    d
    for d in CATALOGUE.document_types
    if d.scheme == "net-doctype-wildcard" and d.value.endswith("billing-1@jp-1::2.1")
)
PROCESS = "cenbii-procid-ubl::urn:peppol:bis:billing"


def receiver(exact: bool) -> Participant:
    me = UserRef("alice")
    return Participant(
        uuid.uuid4(), uuid.uuid4(), "ACME", "0088:7300010000001", "0088:7300010000001",
        uuid.uuid4(), uuid.uuid4(), Environment.TEST, "net-transport-as4-v2_0", T0, me, T0, me,
        supported_document_types=(SupportedDocumentType(JP.id, PROCESS, exact),),
    )  # fmt: skip


def envelope(value: str, process: str = PROCESS) -> Sbdh:
    scheme, _, process_value = process.partition("::")
    return Sbdh(
        Identifier("iso6523-actorid-upis", "0088:7300010000002"),
        Identifier("iso6523-actorid-upis", "0088:7300010000001"),
        "instance", "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2", "2.1", "Invoice",
        T0, Identifier("peppol-doctype-wildcard", value), Identifier(scheme, process_value), "JP",
    )  # fmt: skip


def context() -> Context:
    storage = InMemoryStorage()
    return Context(
        uow=storage.unit_of_work,
        catalogue=CATALOGUE,
        clock=lambda: T0,
        clock_ns=system_clock_ns,
        new_id=random_id,
    )


@pytest.mark.parametrize(
    ("customization", "by_wildcard", "exactly"),
    [
        ("billing-1@jp-1", True, True),
        ("billing-1@jp-1@x-2", True, False),  # more specific: the wildcard covers it
        ("billing-1@jp-1*", True, False),  # the registration's own value
        ("billing-1@jp-10", False, False),  # not cut at an @
        ("billing-1", False, False),  # less specific
        ("billing-1@aunz-1", False, False),
    ],
)
def test_a_wildcard_registration_takes_the_documents_it_covers(
    customization: str, by_wildcard: bool, exactly: bool
) -> None:
    value = JP.value.replace("billing-1@jp-1::", f"{customization}::")
    ctx = context()
    assert serves(ctx, receiver(exact=False), envelope(value)) is by_wildcard
    assert serves(ctx, receiver(exact=True), envelope(value)) is exactly
    assert not serves(ctx, receiver(exact=False), envelope(value, "cenbii-procid-ubl::other"))
