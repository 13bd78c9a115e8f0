"""The failed authentications processes of one PostgreSQL database tell each other: what one
gathers reaches the others whole, in bounded notifications, and a notification that is not
exactly what a process sends is ignored (``adapters.postgres.failures``)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fourcorner.adapters.postgres.failures import (
    MAX_BYTES,
    MAX_COUNT,
    MAX_KEYS,
    MAX_PENDING,
    FailureShare,
)

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


def share(sender: str, schema: str | None = "fc", heard: Heard | None = None) -> FailureShare:
    shared = FailureShare(schema, sender, heard or Heard())
    shared.resume()
    return shared


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


def test_nothing_gathers_while_the_listener_is_down_and_what_had_gathered_is_dropped():
    shared = FailureShare("fc", "a" * 12, Heard())
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
        sent.update(json.loads(payload.split(":", 2)[2]))
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
    share("a" * 12, heard=heard).hear(f"fc:{'b' * 12}:{body}")
    assert heard.notes == []


@pytest.mark.parametrize("sender", ["", "b" * 11, "b" * 13, "B" * 12, "g" * 12, "b" * 11 + ":"])
def test_a_notification_of_a_malformed_sender_is_ignored(sender):
    heard = Heard()
    share("a" * 12, heard=heard).hear(f'fc:{sender}:{{"addr:1": 1}}')
    assert heard.notes == []


@given(text=st.text(max_size=300) | st.binary(max_size=300).map(lambda b: b.decode("latin-1")))
def test_whatever_is_notified_only_well_formed_failures_are_heard(text):
    heard = Heard()
    share("a" * 12, heard=heard).hear("fc:" + text)
    for note in heard.notes:
        assert 0 < len(note) <= MAX_KEYS
        assert all(k.startswith(("addr:", "key:")) and len(k) <= 85 for k in note)
        assert all(type(c) is int and 0 < c <= MAX_COUNT for c in note.values())
