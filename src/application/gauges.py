"""Figures for monitoring read from storage: the current depth of the two work queues
(totals and durations are counted from the events, in ``telemetry``)."""

from __future__ import annotations

import attrs

from fourcorner.application.collections import DELIVERIES, TRANSACTIONS
from fourcorner.application.context import Context
from fourcorner.domain.transaction import Direction, Status
from fourcorner.domain.webhook import DeliveryStatus


@attrs.frozen
class Gauges:
    transactions: int  # documents and statuses waiting to be sent
    deliveries: int  # webhook deliveries waiting


async def read(ctx: Context) -> Gauges:
    async with ctx.uow() as uow:
        tx = uow.repository(TRANSACTIONS)
        transactions = sum(
            [
                await tx.count(direction=Direction.TO_NETWORK, transactionStatus=s)
                for s in (Status.UNPROCESSED, Status.PROCESSING)
            ]
        )
        deliveries = await uow.repository(DELIVERIES).count(status=DeliveryStatus.PENDING)
    return Gauges(transactions, deliveries)
