"""The blobs one side of the loop stores for a transaction, on the file store and the
PostgreSQL store, in one process: a 10 KB document (an upload adopted) and a receipt, with and
without a validated document's two reports (its SVRL and JSON summary), ``--concurrency`` at a
time. Prints the process's CPU time (user and system: a file's ``fsync`` is mostly the latter)
and the wall time per transaction.

The stores' ``put_all`` stores them in one call; code without it (a ``PYTHONPATH`` of an
earlier checkout) stores them one call each, as that code's intake and receiving did, so the
two can be run in turn:

    PYTHONPATH=/tmp/base/.build/typecheck .venv/bin/python bench/bench_blobs.py
    .venv/bin/python bench/bench_blobs.py
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import psycopg

from fourcorner.adapters.blobs import FileBlobStore
from fourcorner.adapters.postgres import PostgresStorage
from fourcorner.adapters.postgres.blobs import PostgresBlobStore

PG_URL = "postgresql://postgres@127.0.0.1:5432/test"


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def side(store: Any, reports: bool) -> None:
    """One receiving side's blobs: the document, the receipt and, with ``reports``, the SVRL
    and the summary."""
    tx = uuid.uuid4().hex
    incoming = store.incoming()
    await asyncio.to_thread(incoming.write_bytes, os.urandom(10240))
    blobs: list[tuple[str, bytes | Path]] = []
    if reports:
        blobs += [(f"{tx}-svrl", os.urandom(166)), (f"{tx}-json", os.urandom(281))]
    blobs += [(f"{tx}-document", incoming), (f"{tx}-receipt", os.urandom(3000))]
    if hasattr(store, "put_all"):
        await store.put_all(blobs)
        return
    for key, source in blobs:  # the code before put_all
        await (store.put(key, source) if isinstance(source, bytes) else store.adopt(key, source))


async def measure(store: Any, reports: bool, n: int, concurrency: int) -> tuple[float, float]:
    gate = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with gate:
            await side(store, reports)

    await asyncio.gather(*(one() for _ in range(concurrency * 2)))  # warm up
    c0, t0 = cpu(), time.perf_counter()
    await asyncio.gather(*(one() for _ in range(n)))
    return 1000 * (cpu() - c0) / n, 1000 * (time.perf_counter() - t0) / n


async def with_store(kind: str, url: str, work: Callable[[Any], Awaitable[None]]) -> None:
    folder = Path(tempfile.mkdtemp(prefix="bench-blobs-"))
    if kind == "filesystem":
        await work(FileBlobStore(folder / "blobs"))
        return
    schema = f"fc_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(url, autocommit=True) as c:
        c.execute(f'CREATE SCHEMA "{schema}"')
    try:
        await PostgresStorage(url, schema=schema).migrate()
        store = PostgresBlobStore(url, schema=schema, spool=folder / "spool")
        await store.open()
        try:
            await work(store)
        finally:
            await store.close()
    finally:
        with psycopg.connect(url, autocommit=True) as c:
            c.execute(f'DROP SCHEMA "{schema}" CASCADE')


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--stores", default="filesystem,postgres")
    p.add_argument("--transactions", type=int, default=300)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--pg-url", default=PG_URL)
    args = p.parse_args()

    for kind in args.stores.split(","):

        async def work(store: Any, kind: str = kind) -> None:
            how = "put_all" if hasattr(store, "put_all") else "one call each"
            for reports in (False, True):
                ms, wall = await measure(store, reports, args.transactions, args.concurrency)
                what = "document, receipt, SVRL, summary" if reports else "document, receipt"
                print(
                    f"{kind:10} {how:13} {what:33} CPU {ms:.2f} ms, wall {wall:.2f} ms"
                    " per transaction",
                    flush=True,
                )

        asyncio.run(with_store(kind, args.pg_url, work))


if __name__ == "__main__":
    main()
