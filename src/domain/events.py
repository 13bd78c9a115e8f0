"""The events the service raises, and the message level status response codes."""

from __future__ import annotations

TRANSACTION_RECEIVED = "transaction.received"
TRANSACTION_SENT = "transaction.sent"
TRANSACTION_SEND_FAILED = "transaction.send_failed"
MLS_RECEIVED = "mls.received"
WEBHOOK_TEST = "webhook.test"

# The one list of event names: webhooks subscribe to these, the constants endpoint serves it.
EVENT_NAMES: tuple[str, ...] = (
    TRANSACTION_RECEIVED,
    TRANSACTION_SENT,
    TRANSACTION_SEND_FAILED,
    MLS_RECEIVED,
    WEBHOOK_TEST,
)

MLS_RESPONSE_CODES: dict[str, str] = {
    "AP": "Accepted: delivered to the receiver, which confirmed it",
    "AB": "Acknowledged: delivered to the receiver, without confirmation",
    "RE": "Rejected: refused, or delivery failed",
}
