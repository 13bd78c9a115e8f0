"""The failed authentications processes of one PostgreSQL database tell each other: what one
gathers reaches the others whole, in bounded notifications, and a notification that is not
exactly what a process sends, or not authenticated by the key the processes share, or heard
before, is ignored (``adapters.postgres.failures``)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fourcorner.adapters.postgres import failures
from fourcorner.adapters.postgres.failures import (
    FRESH,
    MAX_BYTES,
    MAX_COUNT,
    MAX_KEYS,
    MAX_PENDING,
    FailureShare,
)
from fourcorner.entrypoints.http.throttle import FailureTracker

KEY = b"k" * 32
NOW = 1_800_000_000.0

KEYS = st.builds(
    "{}:{}".format,
    st.sampled_from(["addr", "key"]),
    st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=80),
)


class Heard:
    def __init__(self) -> None:
        self.notes: list[Mapping[str, int]] = []

    def __call__(self, failures: Mapping[str, int]) -> None:
        self.notes.append(failures)

    def total(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for note in self.notes:
            total.update(note)
        return total


class Clock:
    def __init__(self, now: float = NOW) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def share(
    sender: str,
    schema: str | None = "fc",
    heard: Heard | None = None,
    keys: tuple[bytes, ...] = (KEY,),
    clock: Clock | None = None,
) -> FailureShare:
    shared = FailureShare(schema, sender, heard or Heard(), keys, clock=clock or Clock())
    shared.resume()
    return shared


def signed(body: str, sender: str = "b" * 12, key: bytes = KEY, sent: float = NOW) -> str:
    """A notification of ``body`` as a process of schema ``fc`` signs it."""
    return failures.signed(key, f"fc:{sender}:", str(int(sent * 1000)), body)


@given(failures=st.lists(st.lists(KEYS, min_size=1, max_size=2), max_size=300))
def test_what_one_process_gathers_reaches_another_whole_in_bounded_notifications(failures):
    heard = Heard()
    sending, hearing = share("a" * 12), share("b" * 12, heard=heard)
    for keys in failures:
        sending.failed(keys)
    payloads = sending.take()
    assert sending.take() == []
    for payload in payloads:
        assert len(payload.encode()) <= MAX_BYTES
        hearing.hear(payload)
    assert all(0 < len(note) <= MAX_KEYS for note in heard.notes)
    expected: Counter[str] = Counter()
    for keys in failures:
        expected.update(k for k in keys if k in expected or len(expected) < MAX_PENDING)
    assert heard.total() == expected


def test_a_process_hears_neither_its_own_nor_another_schemas_notifications():
    heard = Heard()
    own = share("a" * 12, heard=heard)
    other_schema = share("b" * 12, schema="elsewhere")
    no_schema = share("c" * 12, schema=None)
    for shared in (own, other_schema, no_schema):
        shared.failed(["addr:192.0.2.1"])
        for payload in shared.take():
            own.hear(payload)
    assert heard.notes == []
    same = share("d" * 12)
    same.failed(["addr:192.0.2.1"])
    own.hear(same.take()[0])
    assert heard.notes == [{"addr:192.0.2.1": 1}]


def test_a_notification_signed_by_another_key_or_not_signed_is_ignored():
    heard = Heard()
    hearing = share("a" * 12, heard=heard)
    body = '{"addr:192.0.2.1": 1}'
    hearing.hear(signed(body, key=b"x" * 32))
    hearing.hear(f"fc:{'b' * 12}:{body}")
    hearing.hear(signed(body).replace('"addr:192.0.2.1"', '"addr:192.0.2.2"'))
    assert heard.notes == []
    hearing.hear(signed(body))
    assert heard.notes == [{"addr:192.0.2.1": 1}]


def test_while_the_key_is_rotated_notifications_signed_by_either_key_are_heard():
    heard = Heard()
    hearing = share("a" * 12, heard=heard, keys=(KEY, b"p" * 32))
    previous = share("b" * 12, keys=(b"p" * 32,))
    previous.failed(["addr:192.0.2.1"])
    for payload in previous.take():
        hearing.hear(payload)
    hearing.hear(signed('{"addr:192.0.2.2": 1}', sender="c" * 12))
    assert heard.notes == [{"addr:192.0.2.1": 1}, {"addr:192.0.2.2": 1}]


def test_a_notification_is_heard_once_and_only_while_fresh():
    heard = Heard()
    clock = Clock()
    hearing = share("a" * 12, heard=heard, clock=clock)
    payload = signed('{"addr:192.0.2.1": 1}')
    hearing.hear(payload)
    hearing.hear(payload)
    assert heard.notes == [{"addr:192.0.2.1": 1}]
    clock.now = NOW + FRESH + 1  # replayed once forgotten: too old
    hearing.hear(payload)
    hearing.hear(signed('{"addr:192.0.2.2": 1}', sent=NOW + 2 * FRESH + 2))  # too far ahead
    assert heard.notes == [{"addr:192.0.2.1": 1}]


def test_a_stream_of_forged_or_replayed_notifications_locks_no_address_out():
    """A notification repeated every few seconds (NOTIFY needs no privilege) would keep an
    address that never failed refused: unauthenticated or replayed, it is not heard."""
    clock = Clock(0.0)
    tracker = FailureTracker(10, 60.0, clock=clock)
    hearing = FailureShare("fc", "a" * 12, tracker.heard, (KEY,), clock=clock)
    hearing.resume()
    forged = "fc:" + "f" * 12 + ':{"addr:203.0.113.7": 1000000}'
    captured = signed('{"addr:203.0.113.9": 1000000}', sent=0.0)
    refused = {"addr:203.0.113.7": 0, "addr:203.0.113.9": 0}
    for second in range(3600):
        clock.now = float(second)
        if second % 6 == 0:
            hearing.hear(forged)
            hearing.hear(captured)
        for address in refused:
            refused[address] += tracker.retry_after([address]) > 0
    assert refused["addr:203.0.113.7"] == 0
    assert refused["addr:203.0.113.9"] <= 60 / 10  # heard once: one interval


@given(
    at=st.integers(min_value=0, max_value=200),
    char=st.characters(min_codepoint=32, max_codepoint=126),
)
def test_a_notification_changed_anywhere_is_ignored(at, char):
    heard = Heard()
    payload = signed('{"addr:192.0.2.1": 3, "key:fck_abc": 1}')
    at %= len(payload)
    changed = payload[:at] + char + payload[at + 1 :]
    share("a" * 12, heard=heard).hear(changed)
    assert heard.notes == ([] if changed != payload else [{"addr:192.0.2.1": 3, "key:fck_abc": 1}])


def test_nothing_gathers_while_the_listener_is_down_and_what_had_gathered_is_dropped():
    shared = FailureShare("fc", "a" * 12, Heard(), (KEY,))
    shared.failed(["addr:192.0.2.1"])  # not resumed yet: the listener never connected
    assert shared.take() == []
    shared.resume()
    shared.failed(["addr:192.0.2.1"])
    shared.suspend()
    shared.failed(["addr:192.0.2.1"])
    assert shared.take() == []


def test_a_flood_of_failures_gathers_bounded_keys_and_counts():
    shared = share("a" * 12)
    for i in range(MAX_PENDING * 4):
        shared.failed([f"addr:10.0.{i >> 8}.{i & 255}", "key:fck_flood1"])
    # keys that are not what a tracker counts by are not shared (their process counts them)
    shared.failed(["addr:" + "x" * 81, "addr:\u00e9", "other:1"])
    payloads = shared.take()
    sent = {}
    for payload in payloads:
        sent.update(json.loads(payload.split(":", 4)[4]))
    assert len(sent) == MAX_PENDING and sent["key:fck_flood1"] == MAX_PENDING * 4
    assert len(payloads) <= MAX_PENDING // MAX_KEYS + 1


@pytest.mark.parametrize(
    "body",
    [
        "{",
        "[]",
        "{}",
        '{"addr:1": 0}',
        '{"addr:1": -1}',
        '{"addr:1": 1.0}',
        '{"addr:1": true}',
        '{"addr:1": "1"}',
        '{"addr:1": null}',
        f'{{"addr:1": {MAX_COUNT + 1}}}',
        '{"addr:1": 1e400}',
        '{"addr:1": NaN}',
        '{"addr:1": ' + "9" * 5000 + "}",
        '{"user:1": 1}',
        '{"addr:\\u00e9": 1}',
        '{"addr:' + "x" * 81 + '": 1}',
        '{"addr:1": 1, "key:2": "x"}',
        "{" + ",".join(f'"addr:{i}": 1' for i in range(MAX_KEYS + 1)) + "}",
        "[" * 7_000,
        '{"addr:1": 1}' + " " * MAX_BYTES,
    ],
)
def test_a_malformed_notification_is_ignored_whole(body):
    heard = Heard()
    share("a" * 12, heard=heard).hear(signed(body))
    assert heard.notes == []


@pytest.mark.parametrize("sender", ["", "b" * 11, "b" * 13, "B" * 12, "g" * 12, "b" * 11 + ":"])
def test_a_notification_of_a_malformed_sender_is_ignored(sender):
    heard = Heard()
    share("a" * 12, heard=heard).hear(signed('{"addr:1": 1}', sender))
    assert heard.notes == []


@given(text=st.text(max_size=300) | st.binary(max_size=300).map(lambda b: b.decode("latin-1")))
def test_whatever_is_notified_only_well_formed_failures_are_heard(text):
    heard = Heard()
    share("a" * 12, heard=heard).hear("fc:" + text)
    for note in heard.notes:
        assert 0 < len(note) <= MAX_KEYS
        assert all(k.startswith(("addr:", "key:")) and len(k) <= 85 for k in note)
        assert all(type(c) is int and 0 < c <= MAX_COUNT for c in note.values())
