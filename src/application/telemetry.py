"""What the service tells its operator: one log record per event, with a stable ``event`` name
and the fields that explain it (never a secret).

The records go to the ``fourcorner.events`` logger, which always lets INFO through: the
entrypoints count them into the Prometheus metrics (``entrypoints.http.metrics``) whatever
level the log itself is written at. Event names:

- ``transaction.status``: a transaction took a status (``transaction_id``, ``org_id``,
  ``direction``, ``kind``, ``status``, ``error_code``; ``seconds_since_intake`` when it is
  COMPLETED);
- ``as4.sent``: one sending attempt's outcome (``outcome``: ``ok`` or the TXE code,
  ``seconds``); ``send.failed``: a failed attempt with its cause (``error_code``, ``cause``,
  ``final``, ``counted``, ``next_attempt_at``);
- ``as4.received`` / ``as4.refused``: an inbound AS4 message taken or refused (``ebms_code``,
  ``sender``, ``reason``); ``as4.deferred``: one answered 503 to be sent again later, as the
  revocation of its sender's certificate cannot be checked yet (``reason``: why, which the
  sender is not told); ``as4.message_id_reused``: another document under a MessageId taken
  before, answered with the first one's receipt and not stored (``sender``, ``message_id``);
- ``smp.lookup_failed``: the receiver's endpoint could not be found;
- ``webhook.attempt`` / ``webhook.failed``: one webhook delivery attempt, and its cause when
  it failed.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from fourcorner.domain.transaction import Transaction

log = logging.getLogger("fourcorner.events")
log.setLevel(logging.INFO)


def emit(event: str, message: str, level: int = logging.INFO, **fields: Any) -> None:
    log.log(level, message, extra={"event": event, **fields})


def transaction_status(tx: Transaction, now: datetime | None = None) -> None:
    """``tx`` was stored with its (new) status; ``now``: when, for the time since intake."""
    fields: dict[str, Any] = {
        "transaction_id": str(tx.id),
        "org_id": str(tx.org_id),
        "direction": tx.direction.value,
        "kind": tx.kind.value,
        "status": tx.transaction_status.value,
        "error_code": tx.service_error.code if tx.service_error else None,
    }
    if now is not None and tx.transaction_status.value == "COMPLETED":
        fields["seconds_since_intake"] = max(0.0, (now - tx.created_at).total_seconds())
    emit("transaction.status", "transaction status", **fields)


def sent(tx: Transaction, outcome: str, seconds: float) -> None:
    emit(
        "as4.sent",
        "AS4 message sent" if outcome == "ok" else "AS4 message not sent",
        transaction_id=str(tx.id),
        org_id=str(tx.org_id),
        outcome=outcome,
        seconds=seconds,
    )


def send_failed(
    tx: Transaction,
    code: str,
    cause: str,
    *,
    final: bool,
    next_attempt_at: datetime | None = None,
    counted: bool = True,
) -> None:
    """Attempt ``tx.attempts + 1`` of ``tx`` failed; ``counted``: as one of its attempts (a
    busy receiver's refusal may not be); ``next_attempt_at``: when it is tried again."""
    emit(
        "send.failed",
        "sending attempt failed",
        logging.WARNING,
        transaction_id=str(tx.id),
        org_id=str(tx.org_id),
        attempt=tx.attempts + 1,
        error_code=code,
        cause=cause,
        final=final,
        counted=counted,
        next_attempt_at=None if next_attempt_at is None else next_attempt_at.isoformat(),
    )


def lookup_failed(tx: Transaction, problem: str, reason: str) -> None:
    emit(
        "smp.lookup_failed",
        "receiver lookup failed",
        logging.WARNING,
        transaction_id=str(tx.id),
        org_id=str(tx.org_id),
        receiver=tx.receiver_id,
        problem=problem,
        reason=reason,
    )


def received(org_id: Any, sender: str, message_id: str) -> None:
    emit(
        "as4.received",
        "AS4 message received",
        org_id=str(org_id),
        sender=sender,
        message_id=message_id,
    )


def refused(org_id: Any, ebms_code: str, sender: str | None, reason: str) -> None:
    emit(
        "as4.refused",
        "AS4 message refused",
        logging.WARNING,
        org_id=str(org_id),
        ebms_code=ebms_code,
        sender=sender,
        reason=reason,
    )


def message_id_reused(org_id: Any, sender: str, message_id: str) -> None:
    """A sending access point sent another document under a MessageId it used before: it is
    answered as the first was, and not stored."""
    emit(
        "as4.message_id_reused",
        "AS4 MessageId reused for another document: answered as the first, not stored",
        logging.WARNING,
        org_id=str(org_id),
        sender=sender,
        message_id=message_id,
    )


def deferred(org_id: Any, reason: str) -> None:
    emit(
        "as4.deferred",
        "AS4 message to be sent again: the revocation of its sender's certificate is not known",
        logging.WARNING,
        org_id=str(org_id),
        reason=reason,
    )


def webhook_attempt(delivery_id: Any, webhook_id: Any, outcome: str, cause: str = "") -> None:
    """``outcome``: ``delivered``, ``failed`` (tried again later) or ``given_up``."""
    emit(
        "webhook.attempt",
        "webhook delivery attempt",
        delivery_id=str(delivery_id),
        webhook_id=str(webhook_id),
        outcome=outcome,
    )
    if outcome != "delivered":
        emit(
            "webhook.failed",
            "webhook delivery failed",
            logging.WARNING,
            delivery_id=str(delivery_id),
            webhook_id=str(webhook_id),
            final=outcome == "given_up",
            cause=cause,
        )
