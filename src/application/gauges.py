"""Figures for monitoring, read from storage: transactions by status, deliveries by outcome,
and the depth of the two work queues."""

from __future__ import annotations

import attrs

from application.collections import DELIVERIES, TRANSACTIONS
from application.context import Context
from domain.transaction import Direction, Status
from domain.webhook import DeliveryStatus


@attrs.frozen
class Gauges:
    transactions: dict[tuple[str, str], int]  # (direction, status) -> count
    deliveries: dict[str, int]  # status -> count


async def read(ctx: Context) -> Gauges:
    async with ctx.uow() as uow:
        tx = uow.repository(TRANSACTIONS)
        transactions = {
            (d.value, s.value): await tx.count(direction=d, transactionStatus=s)
            for d in Direction
            for s in Status
        }
        deliveries = {
            s.value: await uow.repository(DELIVERIES).count(status=s) for s in DeliveryStatus
        }
    return Gauges(transactions, deliveries)
