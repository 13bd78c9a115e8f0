"""The response classes: each answer shows the fields its class names and nothing else of the
record (an allow-list), with the types and names its OpenAPI schema declares."""

from __future__ import annotations

import typing
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fourcorner.adapters.codelists import load_catalogue
from fourcorner.application.ports import PublishedEndpoint, ReceiverLookup
from fourcorner.domain.api_key import ApiKey
from fourcorner.domain.catalogue import DocumentType, IdentifierScheme, TransportProfile
from fourcorner.domain.certificates import Certificate
from fourcorner.domain.member import Member
from fourcorner.domain.network_services import AccessPoint, Smp
from fourcorner.domain.organisation import Address, Contact, Organisation, UserRef
from fourcorner.domain.participant import (
    BusinessCard,
    DirectoryPublication,
    Participant,
    SupportedDocumentType,
)
from fourcorner.domain.roles import ORG_ROLES
from fourcorner.domain.transaction import Artefact, ServiceError, Transaction
from fourcorner.domain.user import User
from fourcorner.domain.validation import FailedAssert, ValidationResult
from fourcorner.domain.webhook import Attempt, DeliverySummary, Event, Webhook
from fourcorner.entrypoints.http import catalogue_handlers as catalogue
from fourcorner.entrypoints.http import rendering, responses
from fourcorner.entrypoints.http.converter import make_converter
from fourcorner.entrypoints.http.rendering import Answer, Shown, json_name

CONV = make_converter()
RECORDS: dict[str, tuple[Answer, type]] = {
    "organisation": (responses.ORGANISATION, Organisation),
    "user": (responses.USER, User),
    "member": (responses.MEMBER, Member),
    "api key": (responses.API_KEY, ApiKey),
    "participant": (responses.PARTICIPANT, Participant),
    "supported document type": (responses.SUPPORTED, SupportedDocumentType),
    "access point": (responses.ACCESS_POINT, AccessPoint),
    "certificate": (responses.CERTIFICATE, Certificate),
    "smp": (responses.SMP, Smp),
    "receiver lookup": (responses.RECEIVER_LOOKUP, ReceiverLookup),
    "webhook": (responses.WEBHOOK, Webhook),
    "event": (responses.EVENT, Event),
    "transaction": (responses.TRANSACTION, Transaction),
    "artefact": (responses.ARTEFACT, Artefact),
    "validation result": (responses.VALIDATION, ValidationResult),
    "document type": (catalogue.DOCUMENT_TYPE, DocumentType),
    "identifier scheme": (catalogue.IDENTIFIER_SCHEME, IdentifierScheme),
    "transport profile": (catalogue.TRANSPORT_PROFILE, TransportProfile),
}
# what the handlers add to a record's answer
GIVEN: dict[str, dict[str, Any]] = {
    "organisation": {"certificates": ()},
}
SECRETS = {
    "organisation": {"legalKey"},
    "user": {"issuer", "subject", "tokensNotBefore"},
    "api key": {"keyHash"},
    "participant": {"identifierKey"},
    "certificate": {"sealedKey", "publicKeySha256", "holdsKey"},
    "smp": {"orgId", "certificateRef"},
    "webhook": {"sealedSecret"},
    "transaction": {"orgId", "leaseUntil", "attempts", "as4MessageId", "mlsTo"},
}
_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)
_SPECIAL: dict[Any, st.SearchStrategy[Any]] = {
    str: _TEXT,
    datetime: st.datetimes(timezones=st.just(UTC)),
    Mapping[str, Any]: st.dictionaries(_TEXT, st.integers(-(2**40), 2**40), max_size=2),
    bytes: st.just(b""),
}


def records(cls: type, **fixed: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Instances of the attrs class ``cls``, every init field drawn from its type."""
    hints = typing.get_type_hints(cls)
    fields = {
        a.name: fixed[a.name] if a.name in fixed else st.deferred(lambda tp=hints[a.name]: _of(tp))
        for a in attrs.fields(cls)
        if a.init
    }
    return st.builds(cls, **fields)


def _of(tp: Any) -> st.SearchStrategy[Any]:
    special = _SPECIAL.get(tp)
    return special if special is not None else st.from_type(tp)


for _nested in (
    UserRef,
    Contact,
    Address,
    BusinessCard,
    DirectoryPublication,
    SupportedDocumentType,
    Attempt,
    DeliverySummary,
    ServiceError,
    FailedAssert,
    PublishedEndpoint,
):
    st.register_type_strategy(_nested, records(_nested))

_FIXED = {
    Member: {"role": st.sampled_from(sorted(ORG_ROLES, key=str))},
    Transaction: {"created_ns": st.integers(0, 2**62)},
}


def record_of(kind: str) -> st.SearchStrategy[Any]:
    _, cls = RECORDS[kind]
    if cls in (DocumentType, IdentifierScheme, TransportProfile):  # the published code lists
        lists = load_catalogue()
        published = {
            DocumentType: lists.document_types,
            IdentifierScheme: lists.schemes,
            TransportProfile: lists.transport_profiles,
        }
        return st.sampled_from(published[cls])
    return records(cls, **_FIXED.get(cls, {}))


def leaky(record: Any) -> Any:
    """``record`` as an instance of a subclass with one more field, ``leakedSecret``."""
    cls = type(record)
    subclass = attrs.make_class(
        "Leaky" + cls.__name__,
        {"leaked_secret": attrs.field(default="s3cret")},
        bases=(cls,),
        frozen=True,
    )
    return subclass(**{a.name: getattr(record, a.name) for a in attrs.fields(cls) if a.init})


def _meta(a: attrs.Attribute[Any]) -> Shown:
    meta: Shown = a.metadata.get("fourcorner.http.shown", Shown())
    return meta


@pytest.mark.parametrize("kind", sorted(RECORDS))
@settings(max_examples=15, suppress_health_check=list(HealthCheck), deadline=None)
@given(data=st.data())
def test_a_field_added_to_a_record_stays_out_of_its_answer(kind, data):
    answer, _ = RECORDS[kind]
    record = data.draw(record_of(kind))
    given_values = GIVEN.get(kind, {})
    answered = answer.dump(CONV, leaky(record), **given_values)
    assert "leakedSecret" not in answered and "s3cret" not in answered.values()
    assert answered == answer.dump(CONV, record, **given_values)


@pytest.mark.parametrize("kind", sorted(RECORDS))
@settings(max_examples=15, suppress_health_check=list(HealthCheck), deadline=None)
@given(data=st.data())
def test_an_answer_shows_the_properties_of_its_schema(kind, data):
    answer, _ = RECORDS[kind]
    components: dict[str, Any] = {}
    schema = components[answer.schema(components)["$ref"].rsplit("/", 1)[1]]
    answered = answer.dump(CONV, data.draw(record_of(kind)), **GIVEN.get(kind, {}))
    assert set(schema["required"]) <= answered.keys() <= schema["properties"].keys()
    assert not SECRETS.get(kind, set()) & schema["properties"].keys()


@pytest.mark.parametrize("kind", sorted(RECORDS))
def test_every_field_an_answer_reads_is_a_field_of_its_record_of_the_same_type(kind):
    answer, cls = RECORDS[kind]
    hints, record_hints = typing.get_type_hints(answer.cls), typing.get_type_hints(cls)
    record_fields = {a.name for a in attrs.fields(cls)}
    for a in attrs.fields(answer.cls):
        meta = _meta(a)
        if meta.given or meta.const is not None:
            continue
        source = meta.source or a.name
        if source not in record_fields:  # a property of the record, e.g. ``valid``
            assert isinstance(getattr(cls, source, None), property), (kind, source)
            continue
        if meta.render is None and "Response" not in repr(hints[a.name]):
            assert hints[a.name] == record_hints[source], (kind, a.name)


def test_the_names_an_answer_writes_are_unique_and_given_fields_come_last():
    for kind, (answer, _) in RECORDS.items():
        names = [json_name(a) for a in attrs.fields(answer.cls)]
        assert len(names) == len(set(names)), kind
    with pytest.raises(TypeError, match="given fields come last"):

        @attrs.frozen
        class Wrong:
            extra: str = rendering.given()
            id: uuid.UUID = rendering.shown()

        Answer(Wrong, "Wrong")


@settings(max_examples=5, suppress_health_check=list(HealthCheck))
@given(records(Webhook))
def test_a_given_field_left_out_is_refused(record):
    with pytest.raises(TypeError, match="secret"):
        responses.NEW_WEBHOOK.dump(CONV, record)
