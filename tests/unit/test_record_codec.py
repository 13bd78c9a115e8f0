"""The SQL stores' record text (``adapters.sql.codec``): written by orjson, with the standard
library's ``json`` for what orjson refuses, and read back the same whichever wrote it (text
stored before orjson wrote it included)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from fourcorner.adapters.sql.codec import make_converter
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


def test_a_delivery_is_written_compactly_and_reads_back() -> None:
    now = datetime(2026, 11, 26, 5, 0, tzinfo=UTC)
    d = Delivery(
        id=uuid.uuid4(),
        event_id=uuid.uuid4(),
        webhook_id=uuid.uuid4(),
        org_id=uuid.uuid4(),
        created_at=now,
        next_attempt_at=now,
    )
    text = CONVERTER.dumps(d)
    assert f'"id":"{d.id}"' in text and '"created_at":"2026-11-26T05:00:00.000000+00:00"' in text
    assert CONVERTER.loads(text, Delivery) == d
