"""The SQL stores' record text (``adapters.sql.codec``): written by orjson, with the standard
library's ``json`` for what orjson refuses, and read back the same whichever wrote it (text
stored before orjson wrote it included, and a transaction or a webhook delivery stored before
it kept its first busy refusal)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
from hypothesis import given
from hypothesis import strategies as st

from fourcorner.adapters.sql.codec import make_converter
from fourcorner.domain.transaction import Direction, Status, Transaction
from fourcorner.domain.webhook import Attempt, Delivery, DeliveryStatus, DeliverySummary, Event

CONVERTER = make_converter()

# what a payload holds: any JSON, with integers past 64 bits and lone surrogates (orjson
# refuses both), and text outside ASCII (written unescaped now)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**80), 2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(codec=None), max_size=8)
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)
instants = st.datetimes(
    min_value=datetime(2000, 1, 1),
    max_value=datetime(2100, 1, 1),
    timezones=st.sampled_from([UTC, None]),
).map(lambda t: t if t.tzinfo else t.replace(tzinfo=UTC))


@st.composite
def events(draw: st.DrawFn) -> Event:
    at = draw(instants)
    attempt = Attempt(
        number=1,
        at=at + timedelta(seconds=1),
        duration_ms=draw(st.floats(0, 1e6)),
        status_code=draw(st.none() | st.integers(100, 599)),
        error=draw(st.none() | st.text(max_size=20)),
        response_body=draw(st.none() | st.text(max_size=20)),
    )
    status = draw(st.sampled_from(DeliveryStatus))
    summary = DeliverySummary(
        delivery_id=uuid.uuid4(),
        webhook_id=uuid.uuid4(),
        status=status,
        attempts=(attempt,) if draw(st.booleans()) else (),
        next_attempt_at=at if status is DeliveryStatus.PENDING else None,
    )
    return Event(
        id=uuid.uuid4(),
        org_id=uuid.uuid4(),
        event_type="webhook.test",
        payload=draw(st.dictionaries(st.text(max_size=8), values, max_size=4)),
        created_at=at,
        status=status,
        deliveries=(summary,),
    )


@given(events())
def test_a_record_reads_back_equal_whichever_library_wrote_it(event: Event) -> None:
    written = CONVERTER.dumps(event)
    assert CONVERTER.loads(written, Event) == event
    before = json.dumps(CONVERTER.unstructure(event))  # as the stores wrote it before
    assert CONVERTER.loads(before, Event) == event
    assert json.loads(written) == json.loads(before)


def delivery_at(at: datetime, **fields: Any) -> Delivery:
    return Delivery(uuid.uuid4(), uuid.uuid4(), uuid.uuid4(), uuid.uuid4(), at, at, **fields)


def test_a_delivery_is_written_compactly_and_reads_back() -> None:
    d = delivery_at(datetime(2026, 11, 26, 5, 0, tzinfo=UTC))
    text = CONVERTER.dumps(d)
    assert f'"id":"{d.id}"' in text and '"created_at":"2026-11-26T05:00:00.000000+00:00"' in text
    assert CONVERTER.loads(text, Delivery) == d


@given(busy_since=st.none() | instants, attempts=st.integers(0, 3))
def test_a_transaction_stored_before_its_first_busy_refusal_was_kept_reads_as_never_refused(
    busy_since: datetime | None, attempts: int
) -> None:
    """A transaction keeps when it was first refused busy (``busy_since``), in its JSON text
    (no column, no migration); a record stored before it was kept has no such key and reads
    back as not refused busy yet, the rest of it as stored."""
    at = datetime(2026, 11, 26, 5, 0, tzinfo=UTC)
    tx = Transaction(
        id=uuid.uuid4(),
        org_id=uuid.uuid4(),
        direction=Direction.TO_NETWORK,
        ap_id=uuid.uuid4(),
        transport_profile="peppol-transport-as4-v2_0",
        sender_id="0088:5790000000001",
        receiver_id="0088:5790000000002",
        doc_type_id="busdox-docid-qns::invoice",
        process_id="cenbii-procid-ubl::billing",
        sender_country="BE",
        doc_instance_id="doc-1",
        transaction_status=Status.PROCESSING,
        created_at=at,
        created_ns=0,
        last_modified_at=at,
        attempts=attempts,
        busy_since=busy_since,
    )
    text = CONVERTER.dumps(tx)
    assert CONVERTER.loads(text, Transaction) == tx
    stored_before = json.loads(text)
    del stored_before["busy_since"]
    old = CONVERTER.loads(json.dumps(stored_before, separators=(",", ":")), Transaction)
    assert old == attrs.evolve(tx, busy_since=None)


@given(busy_since=st.none() | instants, counted=st.booleans())
def test_a_delivery_stored_before_busy_refusals_were_kept_reads_as_never_refused_busy(
    busy_since: datetime | None, counted: bool
) -> None:
    """A delivery keeps when its endpoint first refused it as busy (``busy_since``) and each
    attempt whether it counted and what a busy refusal said, in its JSON text (no column, no
    migration); a record stored before those were kept has no such keys and reads back as
    never refused busy, each of its attempts counted, the rest of it as stored."""
    at = datetime(2026, 11, 26, 5, 0, tzinfo=UTC)
    busy = None if counted else "the endpoint is busy (HTTP 429): next attempt at …"
    attempt = Attempt(1, at, 3.0, status_code=429, counted=counted, busy=busy)
    d = delivery_at(at, attempts=(attempt,), busy_since=busy_since)
    text = CONVERTER.dumps(d)
    assert CONVERTER.loads(text, Delivery) == d
    stored_before = json.loads(text)
    del stored_before["busy_since"]
    for a in stored_before["attempts"]:
        del a["counted"], a["busy"]
    old = CONVERTER.loads(json.dumps(stored_before, separators=(",", ":")), Delivery)
    plain = attrs.evolve(attempt, counted=True, busy=None)
    assert old == attrs.evolve(d, busy_since=None, attempts=(plain,))
