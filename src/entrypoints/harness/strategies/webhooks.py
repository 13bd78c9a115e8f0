"""Webhook deliveries signed as the service signs them (Standard Webhooks, and the hex
signature), and webhook secrets."""

from __future__ import annotations

import base64
import json
import time
from datetime import UTC, datetime

import attrs
from hypothesis import strategies as st

from fourcorner.domain.webhook import hex_signature, standard_signature


@attrs.frozen
class WebhookDelivery:
    """A delivery as the service sends it: the body and the Standard Webhooks headers
    (``webhook-id``, ``webhook-timestamp``, ``webhook-signature``) and the hex signature."""

    body: bytes
    headers: dict[str, str]


def webhook_secrets() -> st.SearchStrategy[str]:
    return st.binary(min_size=24, max_size=24).map(
        lambda b: "whsec_" + base64.b64encode(b).decode()
    )


@st.composite
def webhook_deliveries(
    draw: st.DrawFn,
    *,
    secret: str | None = None,
    sent_at: int | None = None,
    hex_header: str = "x-webhook-sign",
) -> WebhookDelivery:
    """A signed delivery of an event (``webhook.test`` or a transaction's), signed with
    ``secret`` as the service signs at ``sent_at`` (seconds since the epoch; default now):
    verify it with any Standard Webhooks library. ``hex_header`` is
    ``FOURCORNER_WEBHOOK_HEX_SIGNATURE_HEADER``."""
    key = secret or draw(webhook_secrets())
    event_id = draw(st.uuids())
    event_type = draw(st.sampled_from(["webhook.test", "transaction.sent", "transaction.received"]))
    created = draw(st.datetimes(datetime(2024, 1, 1), datetime(2030, 1, 1), timezones=st.just(UTC)))
    body = json.dumps(
        {
            "id": str(event_id),
            "eventType": event_type,
            "createdAt": created.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            "orgId": str(draw(st.uuids())),
            "payload": {"transactionId": str(draw(st.uuids()))}
            if event_type != "webhook.test"
            else {},
        },
        separators=(",", ":"),
    ).encode()
    message_id = f"msg_{event_id.hex}"
    timestamp = int(time.time()) if sent_at is None else sent_at
    headers = {
        "content-type": "application/json",
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": standard_signature(key, message_id, timestamp, body),
        hex_header: hex_signature(key, body),
    }
    return WebhookDelivery(body, headers)
