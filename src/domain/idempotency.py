"""Idempotency keys: a client names a request (``Idempotency-Key``), and the same request with
the same key gets the same answer for 24 hours, whatever happened in between.

A key belongs to one organisation and is never matched across organisations. It is stored with
a digest of the request it was first used with and the answer given; the same key with another
request is refused (``IdempotencyKeyReused``). A key older than ``KEY_LIFETIME`` no longer
counts, and is purged.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import attrs

from fourcorner.domain.errors import InvalidInput

KEY_LIFETIME = timedelta(hours=24)
MAX_KEY_LENGTH = 255
HEADER = "Idempotency-Key"


@attrs.frozen
class IdempotencyKey:
    """A key used by an organisation: the request's digest and the answer it was given."""

    id: uuid.UUID
    org_id: uuid.UUID
    key: str
    request_digest: str  # hex SHA-256 of what makes the request the same request
    status: int
    answer: str  # the JSON body answered
    created_at: datetime

    def live_at(self, now: datetime) -> bool:
        return now - self.created_at < KEY_LIFETIME


def check_key(text: str) -> str:
    """A key as a client may send it: 1 to 255 printable ASCII characters."""
    if not 1 <= len(text) <= MAX_KEY_LENGTH or not all(" " <= c <= "~" for c in text):
        raise InvalidInput.one(HEADER, f"a key is 1 to {MAX_KEY_LENGTH} printable ASCII characters")
    return text
