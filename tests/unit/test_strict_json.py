"""Request bodies are RFC 8259 JSON (``converter.load_json``): UTF-8 text only, never UTF-16 or
UTF-32 (which ``json.loads`` of bytes would read)."""

from __future__ import annotations

import json

import pytest

from fourcorner.domain.errors import MalformedBody
from fourcorner.entrypoints.http.converter import load_json

BODY = {"userId": "u-1", "role": "orgmember", "tags": ["a", {"b": 1.5, "c": None}]}

ENCODINGS = ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_a_body_in_utf16_or_utf32_is_not_utf8(encoding: str) -> None:
    raw = json.dumps(BODY).encode(encoding)
    assert json.loads(raw) == BODY  # what the standard library would have read
    with pytest.raises(MalformedBody) as caught:
        load_json(raw)
    assert caught.value.reason == "the body is not UTF-8"


def test_utf8_with_a_byte_order_mark_is_read_and_bytes_that_are_not_utf8_are_refused() -> None:
    raw = json.dumps(BODY, ensure_ascii=False).encode()
    assert load_json(b"\xef\xbb\xbf" + raw) == load_json(raw) == BODY
    # a stray byte, an encoded surrogate (which json.loads of bytes lets through), a cut-off
    # sequence
    for bad in (b'{"a": "\xff"}', b'"\xed\xa0\x80"', b'{"a": "\xc3"}'):
        with pytest.raises(MalformedBody) as caught:
            load_json(bad)
        assert caught.value.reason == "the body is not UTF-8", bad
    with pytest.raises(MalformedBody):  # one mark is let through, not two
        load_json(b"\xef\xbb\xbf\xef\xbb\xbf{}")
