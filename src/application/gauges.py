"""Figures for monitoring read from storage: the current depth of the two work queues
(totals and durations are counted from the events, in ``telemetry``)."""

from __future__ import annotations

import attrs

from fourcorner.application.context import Context
from fourcorner.application.repositories import Deliveries, Transactions
from fourcorner.domain.transaction import Status


@attrs.frozen
class Gauges:
    transactions: int  # documents and statuses waiting to be sent
    deliveries: int  # webhook deliveries waiting


async def read(ctx: Context) -> Gauges:
    async with ctx.uow() as uow:
        tx = Transactions(uow)
        transactions = sum(
            [await tx.count_outbound(s) for s in (Status.UNPROCESSED, Status.PROCESSING)]
        )
        deliveries = await Deliveries(uow).count_pending()
    return Gauges(transactions, deliveries)
