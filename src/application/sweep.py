"""The blob sweep: blobs that no record names are removed once they are old enough.

Every blob is stored before the unit of work that records it commits, so that a committed
record never names a blob a crash lost. The other way round, a crash (or a failing commit)
between the two leaves a blob that nothing names. The sweep finds them: it lists the blobs
stored more than ``grace`` ago, asks the storage which of them the transactions they belong to
still use (``transactions.blobs_in_use``: the artefacts' blobs, and the working blobs of a
transaction still to be sent), and deletes the rest, together with uploads left in the blob
store's incoming area.

The grace period is what keeps it from deleting a blob of an intake in flight (stored, not yet
committed): it must be longer than the longest such step, which takes seconds. A key this
service does not make (not ``<transaction id>-...``) is never deleted.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import timedelta

import attrs

from fourcorner.application.context import Context
from fourcorner.application.idle import idle
from fourcorner.application.ports import BlobStore
from fourcorner.application.transactions import blobs_in_use, transaction_of

log = logging.getLogger("fourcorner.sweep")

BATCH = 200


@attrs.frozen
class Sweep:
    """What the sweep removed in one run."""

    blobs: int = 0
    incoming: int = 0


async def sweep(ctx: Context, blobs: BlobStore, grace: timedelta) -> Sweep:
    """One run: remove the blobs stored before ``now - grace`` that no record uses, and the
    uploads left in the incoming area as long."""
    cutoff = ctx.clock() - grace
    incoming = await blobs.discard_incoming(cutoff)
    removed = 0
    batch: list[str] = []
    async for key in blobs.stored(cutoff):
        batch.append(key)
        if len(batch) >= BATCH:
            removed += await _remove_unused(ctx, blobs, batch)
            batch = []
    if batch:
        removed += await _remove_unused(ctx, blobs, batch)
    return Sweep(removed, incoming)


async def _remove_unused(ctx: Context, blobs: BlobStore, keys: Sequence[str]) -> int:
    owners = {key: transaction_of(key) for key in keys}
    ids = sorted({owner for owner in owners.values() if owner is not None})
    async with ctx.uow() as uow:
        used = await blobs_in_use(uow, ids)
    unused = [key for key, owner in owners.items() if owner is not None and key not in used]
    for key in unused:
        await blobs.delete(key)
    return len(unused)


class BlobSweeper:
    """Runs ``sweep`` every ``interval`` until stopped (in the workers' process)."""

    def __init__(
        self, ctx: Context, blobs: BlobStore, *, grace: timedelta, interval: timedelta
    ) -> None:
        self._ctx, self._blobs = ctx, blobs
        self._grace, self._interval = grace, interval

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                done = await sweep(self._ctx, self._blobs, self._grace)
                if done.blobs or done.incoming:
                    log.info(
                        "blob sweep removed unused files",
                        extra={"blobs": done.blobs, "incoming": done.incoming},
                    )
            except Exception:
                log.exception("the blob sweep failed")
            await idle(stop, self._interval.total_seconds())
