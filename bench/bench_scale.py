"""Cost independent of history: the lists' queries on a large database next to the same
queries on an empty one, measured in the same run, on SQLite and PostgreSQL.

For each backend, two databases are seeded through the bulk path (``seed_scale.py``): the
large one (``--transactions``, 1,000,000 by default, with 5 events and deliveries each) and an
"empty" one holding the same organisations and 200 transactions, all of the large
organisation (enough for a full first page of each list). Then, through the storage port
(the SQL the API runs for ``GET /orgs/{orgId}/transactions/to_network``, without HTTP):

- page 1 and page 1,000 (keyset) of the large organisation's sent transactions, newest first:
  page 1,000's time over page 1's (target ≤ 1.2);
- filtered by status and a createdAt range, by participant (senderId), by document type:
  each over the same query on the empty database (target ≤ 1.5);
- the bytes stored per transaction: its table with indexes, its events and deliveries with
  theirs, and a business document (``examples/invoice.sbd.xml``) in the blob store, measured
  on a sample of ``--documents`` stored for the purpose;
- the reading process's memory (RSS) after reading the large organisation's whole history
  page by page, over what it held before;
- the 14-day purge of the events (``application.webhooks.purge``, in a process of its own,
  as the worker runs it) while this process reads pages of random organisations: the reads'
  p99 during the purge next to their p99 before it (target ≤ 50 ms), and the purge's rate.

    .venv/bin/python bench/bench_scale.py                       # 1,000,000 transactions
    .venv/bin/python bench/bench_scale.py --transactions 100000 --big-share 0.5
    .venv/bin/python bench/bench_scale.py --backends postgres --reuse    # seeded already

Times are medians of ``--runs`` runs, each query taken in turn with the one it is compared
with (p99 for the reads during the purge). The purge
changes the large database, which is then dropped; with ``--skip-purge`` both are kept and
``--reuse`` measures them again without seeding.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

import psycopg  # noqa: E402
import seed_scale  # noqa: E402
from common import BIN, env_for, free_port, stop, wait_ready  # noqa: E402
from psycopg import sql  # noqa: E402

import scale_records  # noqa: E402
from fourcorner.adapters.blobs.filesystem import FileBlobStore  # noqa: E402
from fourcorner.adapters.postgres.blobs import PostgresBlobStore  # noqa: E402
from fourcorner.adapters.system import random_id, system_clock, system_clock_ns  # noqa: E402
from fourcorner.application import webhooks  # noqa: E402
from fourcorner.application.collections import TRANSACTIONS  # noqa: E402
from fourcorner.application.context import Context  # noqa: E402
from fourcorner.application.listing import ListRequest, build_query, equals  # noqa: E402
from fourcorner.application.repositories import Transactions  # noqa: E402
from fourcorner.application.storage import Page  # noqa: E402
from fourcorner.domain import clock  # noqa: E402
from fourcorner.domain.catalogue import Catalogue  # noqa: E402
from fourcorner.domain.transaction import Direction  # noqa: E402

EMPTY_TRANSACTIONS = 200
EMAIL = "bench@example.com"  # an orgadmin of the large organisation (seed_scale --member-email)
DOCUMENT = HERE.parent / "examples" / "invoice.sbd.xml"


# --- databases -------------------------------------------------------------------------------


def seed_args(args: argparse.Namespace, backend: str, name: str, empty: bool) -> Any:
    argv = ["--backend", backend, "--pg-url", args.pg_url, "--schema", name]
    argv += ["--sqlite", str(args.dir / f"{name}.sqlite"), "--seed", str(args.seed)]
    argv += ["--organisations", str(args.organisations), "--participants", str(args.participants)]
    if empty:
        argv += ["--transactions", str(EMPTY_TRANSACTIONS), "--big-share", "1"]
    else:
        argv += ["--transactions", str(args.transactions), "--big-share", str(args.big_share)]
    argv += ["--events-per-transaction", str(args.events_per_transaction)]
    return seed_scale.arguments([*argv, "--member-email", EMAIL])


def exists(a: Any) -> bool:
    if a.backend == "sqlite":
        return Path(a.sqlite).exists()
    with psycopg.connect(a.pg_url, autocommit=True) as conn:
        row = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (a.schema,)).fetchone()
        return row is not None


def drop(a: Any) -> None:
    if a.backend == "sqlite":
        for suffix in ("", "-wal", "-shm"):
            Path(f"{a.sqlite}{suffix}").unlink(missing_ok=True)
        return
    with psycopg.connect(a.pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(a.schema)))


def prepare(a: Any, reuse: bool) -> None:
    if reuse and exists(a):
        return
    drop(a)
    result = asyncio.run(seed_scale.seed(a))
    print(
        f"  seeded {a.schema if a.backend == 'postgres' else a.sqlite}: "
        f"{result['transactions']:,} transactions, {result['events']:,} events and as many "
        f"deliveries in {result['seconds']:.0f} s",
        flush=True,
    )
    if a.backend == "postgres":
        with psycopg.connect(a.pg_url, autocommit=True) as conn:
            conn.execute(sql.SQL("SET search_path = {}").format(sql.Identifier(a.schema)))
            conn.execute("VACUUM ANALYZE")
    else:
        with sqlite3.connect(a.sqlite) as conn:
            conn.execute("ANALYZE")


# --- measuring -------------------------------------------------------------------------------


async def timed(
    runs: int, call: Callable[[], Awaitable[Any]], other: Callable[[], Awaitable[Any]]
) -> tuple[float, float]:
    """The medians of ``runs`` calls of ``call`` and of ``other``, in milliseconds, the two
    taken in turn (after two of each to warm up), so that a slower moment of this shared
    machine hits both."""
    for _ in range(2):
        await call()
        await other()
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(runs):
        for f, kept in ((call, times[0]), (other, times[1])):
            started = time.perf_counter()
            await f()
            kept.append((time.perf_counter() - started) * 1000)
    return statistics.median(times[0]), statistics.median(times[1])


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Lists:
    """The large organisation's list of sent transactions, through the storage port."""

    def __init__(self, storage: Any, org_id: Any, limit: int) -> None:
        self.storage = storage
        self.org_id = org_id
        self.limit = limit

    async def page(
        self,
        filters: tuple[str, ...] = (),
        cursor: str | None = None,
        direction: Direction = Direction.TO_NETWORK,
        org_id: Any = None,
    ) -> Page[Any]:
        scope = (
            equals(TRANSACTIONS, "orgId", org_id or self.org_id),
            *Transactions.documents(direction),
        )
        request = ListRequest(filters=filters, cursor=cursor, limit=self.limit)
        query = build_query(TRANSACTIONS, request, scope=scope)
        async with self.storage.unit_of_work() as uow:
            page: Page[Any] = await uow.repository(TRANSACTIONS).list(query)
            return page

    async def cursor_of(self, number: int) -> tuple[int, str | None]:
        """The cursor of page ``number`` (or of the last page, with its number)."""
        cursor: str | None = None
        for n in range(1, number):
            page = await self.page(cursor=cursor)
            if page.next_cursor is None:
                return n, cursor
            cursor = page.next_cursor
        return number, cursor

    async def walk(self, direction: Direction) -> int:
        count, cursor = 0, None
        while True:
            page = await self.page(cursor=cursor, direction=direction)
            count += len(page.items)
            if page.next_cursor is None:
                return count
            cursor = page.next_cursor


def filters(shape: scale_records.Shape) -> dict[str, tuple[str, ...]]:
    mine = scale_records.organisations(shape)[0].participants[0].participant_identifier
    middle = scale_records.START + scale_records.SPAN / 2
    week = middle + (scale_records.SPAN / 60) * 7
    return {
        "status + createdAt range": (
            "transactionStatus:eq:COMPLETED",
            f"createdAt:gte:{clock.iso(middle)}",
            f"createdAt:lt:{clock.iso(week)}",
        ),
        "participant (senderId)": (f"senderId:eq:{mine}",),
        "document type": (f"docTypeId:eq:{scale_records.DOC_TYPES[1]}",),
    }


async def list_figures(
    big: Any, empty: Any, args: argparse.Namespace
) -> tuple[list[tuple[str, float, float, float, str]], dict[str, float]]:
    shape = seed_scale.shape_of(big)
    org_id = scale_records.organisations(shape)[0].organisation.id
    rows = []
    big_storage, empty_storage = seed_scale.storage_for(big), seed_scale.storage_for(empty)
    await big_storage.open()
    await empty_storage.open()
    try:
        on_big, on_empty = (
            Lists(big_storage, org_id, args.limit),
            Lists(empty_storage, org_id, args.limit),
        )
        first, first_empty = await timed(args.runs, on_big.page, on_empty.page)
        rows.append(("page 1", first, first_empty, 1.5, "vs empty"))
        number, cursor = await on_big.cursor_of(args.page)
        deep, first = await timed(args.runs, lambda: on_big.page(cursor=cursor), on_big.page)
        rows.append((f"page {number:,} (keyset)", deep, first, 1.2, "vs page 1"))
        for label, where in filters(shape).items():
            many, few = await timed(
                args.runs,
                lambda w=where: on_big.page(w),  # type: ignore[misc]
                lambda w=where: on_empty.page(w),  # type: ignore[misc]
            )
            rows.append((label, many, few, 1.5, "vs empty"))
        before = rss_mib()
        started = time.perf_counter()
        read = sum([await on_big.walk(d) for d in Direction])
        memory = {
            "rss_before": before,
            "rss_after": rss_mib(),
            "history": read,
            "walk_seconds": time.perf_counter() - started,
        }
    finally:
        await big_storage.close()
        await empty_storage.close()
    return rows, memory


# --- the server's memory ---------------------------------------------------------------------


def server_memory(a: Any, args: argparse.Namespace) -> dict[str, float]:
    """``fourcorner serve`` (workers off) on the large database: its RSS after the first page
    of the large organisation's sent transactions, after reading its whole history page by
    page (``limit=500``, both directions), and after doing it a second time."""
    port = free_port()
    if a.backend == "postgres":
        extra = {"FOURCORNER_DATABASE_URL": a.pg_url, "FOURCORNER_DATABASE_SCHEMA": a.schema}
    else:
        extra = {"FOURCORNER_DATABASE_URL": f"sqlite:///{a.sqlite}"}
    env = env_for(args.dir / f"serve-{a.backend}", port, FOURCORNER_WORKERS="false", **extra)
    proc = subprocess.Popen([str(BIN / "fourcorner"), "serve"], env=env)
    figures: dict[str, float] = {}
    try:
        base = f"http://127.0.0.1:{port}"
        wait_ready(f"{base}/readyz", proc, timeout=120)
        token = subprocess.run(
            [str(BIN / "fourcorner"), "token", "--email", EMAIL],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        auth = {"Authorization": f"Bearer {token}"}
        org = scale_records.organisations(seed_scale.shape_of(a))[0].organisation.id
        lists = [f"{base}/orgs/{org}/transactions/{d}" for d in ("to_network", "from_network")]
        _get(lists[0] + "?limit=20", auth)
        figures["first_page"] = _rss(proc.pid)
        started = time.perf_counter()
        figures["history"] = sum(_walk(url, auth) for url in lists)
        figures["seconds"] = time.perf_counter() - started
        figures["after"] = _rss(proc.pid)
        sum(_walk(url, auth) for url in lists)
        figures["again"] = _rss(proc.pid)
    finally:
        stop(proc)
    return figures


def _get(url: str, auth: dict[str, str]) -> Any:
    request = urllib.request.Request(url, headers=auth)
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def _walk(url: str, auth: dict[str, str]) -> int:
    count, cursor = 0, None
    while True:
        query = "?limit=500" + (f"&cursor={cursor}" if cursor else "")
        body = _get(url + query, auth)
        count += len(body["items"])
        cursor = body["nextCursor"]
        if cursor is None:
            return count


def _rss(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


# --- bytes -----------------------------------------------------------------------------------


async def bytes_figures(a: Any, args: argparse.Namespace) -> dict[str, float]:
    """Bytes per transaction: its row with indexes; its events and deliveries with theirs;
    a stored business document (measured on ``args.documents`` stored for the purpose)."""
    data = DOCUMENT.read_bytes()
    sizes: dict[str, float] = {}
    if a.backend == "postgres":
        with psycopg.connect(a.pg_url, autocommit=True) as conn:

            def total(*tables: str) -> int:
                row = conn.execute(
                    "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = %s AND c.relname = ANY(%s)",
                    (a.schema, list(tables)),
                ).fetchone()
                return int(row[0] or 0) if row else 0

            count = _count_pg(conn, a.schema)
            sizes["transaction"] = total("transactions") / count
            sizes["events + deliveries"] = total("events", "deliveries") / count
            before = total("blobs", "blob_chunks")
            spool = Path(tempfile.mkdtemp(dir=args.dir))
            store = PostgresBlobStore(a.pg_url, spool=spool, schema=a.schema)
            await store.open()
            try:
                keys = [f"{random_id().hex}-bench-document" for _ in range(args.documents)]
                for key in keys:
                    await store.put(key, data)
                conn.execute("VACUUM ANALYZE")
                sizes["document"] = (total("blobs", "blob_chunks") - before) / args.documents
                for key in keys:
                    await store.delete(key)
            finally:
                await store.close()
    else:
        with sqlite3.connect(a.sqlite) as db:
            tables = {
                name: tbl for name, tbl in db.execute("SELECT name, tbl_name FROM sqlite_master")
            }
            used: dict[str, int] = {}
            for name, pages in db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"):
                owner = tables.get(name, name)
                used[owner] = used.get(owner, 0) + pages
            (count,) = db.execute("SELECT count(*) FROM transactions").fetchone()
        sizes["transaction"] = used.get("transactions", 0) / count
        sizes["events + deliveries"] = (used.get("events", 0) + used.get("deliveries", 0)) / count
        root = Path(tempfile.mkdtemp(dir=args.dir))
        files = FileBlobStore(root)
        for _ in range(args.documents):
            await files.put(f"{random_id().hex}-bench-document", data)
        sizes["document"] = _allocated(root) / args.documents
    sizes["document (file)"] = len(data)
    return sizes


def _allocated(root: Path) -> int:
    """The bytes the files under ``root`` take on disk (whole blocks)."""
    return sum(p.stat().st_blocks * 512 for p in root.rglob("*") if p.is_file())


def _count_pg(conn: Any, schema: str) -> int:
    row = conn.execute(
        sql.SQL("SELECT count(*) FROM {}.transactions").format(sql.Identifier(schema))
    ).fetchone()
    return int(row[0])


# --- purge -----------------------------------------------------------------------------------


def _purge(a: Any, now: datetime, batch: int, result: Any) -> None:
    async def run() -> None:
        storage = seed_scale.storage_for(a)
        await storage.open()
        ctx = Context(
            uow=storage.unit_of_work,
            reader=storage.reader,
            catalogue=Catalogue("bench", (), (), (), ()),
            clock=system_clock,
            clock_ns=system_clock_ns,
            new_id=random_id,
        )
        try:
            started = time.perf_counter()
            removed = await webhooks.purge(ctx, now=now, batch=batch)
            result.put((removed, time.perf_counter() - started))
        finally:
            await storage.close()

    asyncio.run(run())


async def purge_figures(a: Any, args: argparse.Namespace) -> dict[str, float]:
    shape = seed_scale.shape_of(a)
    orgs = [o.organisation.id for o in scale_records.organisations(shape)]
    storage = seed_scale.storage_for(a)
    await storage.open()
    lists = Lists(storage, orgs[0], args.limit)
    rng = random.Random(1)

    async def read_until(done: Callable[[], bool]) -> list[float]:
        times = []
        while not done():
            org = orgs[rng.randrange(len(orgs))]
            started = time.perf_counter()
            await lists.page(org_id=org, direction=rng.choice(list(Direction)))
            times.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(0.002)  # a steady stream of reads, not a saturating one
        return times

    try:
        until = time.monotonic() + args.baseline_seconds
        quiet = await read_until(lambda: time.monotonic() > until)
        context = multiprocessing.get_context("spawn")
        result = context.Queue()
        now = scale_records.START + scale_records.SPAN
        process = context.Process(target=_purge, args=(a, now, args.purge_batch, result))
        process.start()
        busy = await read_until(lambda: not process.is_alive())
        process.join()
        removed, seconds = result.get(timeout=5)
    finally:
        await storage.close()
    return {
        "removed": removed,
        "seconds": seconds,
        "rate": removed / seconds if seconds else 0.0,
        "p99_quiet": _p99(quiet),
        "p99_busy": _p99(busy),
        "p50_busy": statistics.median(busy) if busy else 0.0,
        "reads": len(busy),
    }


def _p99(times: list[float]) -> float:
    if not times:
        return 0.0
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


# --- report ----------------------------------------------------------------------------------


def report(backend: str, args: argparse.Namespace) -> None:
    suffix = "" if args.transactions == 1_000_000 else f"_{args.transactions}"
    big = seed_args(args, backend, f"fc_scale{suffix}", empty=False)
    empty = seed_args(args, backend, f"fc_scale_empty{suffix}", empty=True)
    print(f"\n== {backend} ==", flush=True)
    prepare(big, args.reuse)
    prepare(empty, args.reuse)
    rows, memory = asyncio.run(list_figures(big, empty, args))
    print(
        f"\n{'query (limit ' + str(args.limit) + ')':<32} {'large':>9} {'baseline':>9} {'ratio':>6}"
    )
    for label, value, baseline, target, against in rows:
        ratio = value / baseline
        verdict = "ok" if ratio <= target else "MISSED"
        print(
            f"{label:<32} {value:8.2f}ms {baseline:8.2f}ms {ratio:6.2f}  ≤ {target} {against}: "
            f"{verdict}"
        )
    print(
        f"\nmemory: RSS {memory['rss_before']:.0f} MiB before, {memory['rss_after']:.0f} MiB "
        f"after reading {memory['history']:,} transactions page by page "
        f"({memory['walk_seconds']:.1f} s)"
    )
    served = server_memory(big, args)
    print(
        f"server: RSS {served['first_page']:.0f} MiB after page 1, {served['after']:.0f} MiB "
        f"after serving the {served['history']:,.0f} transactions of the large organisation "
        f"page by page (500 a page, {served['seconds']:.1f} s), {served['again']:.0f} MiB after "
        "doing it again"
    )
    sizes = asyncio.run(bytes_figures(big, args))
    total = sizes["transaction"] + sizes["events + deliveries"] + sizes["document"]
    print(
        f"bytes per transaction: {sizes['transaction']:,.0f} (row + indexes) + "
        f"{sizes['events + deliveries']:,.0f} ({args.events_per_transaction} events and "
        f"deliveries + indexes) + {sizes['document']:,.0f} (document of "
        f"{sizes['document (file)']:,.0f} bytes) = {total:,.0f}"
    )
    if args.skip_purge:
        return
    figures = asyncio.run(purge_figures(big, args))
    verdict = "ok" if figures["p99_busy"] <= 50 else "MISSED"
    print(
        f"purge: {figures['removed']:,.0f} events (and deliveries) in {figures['seconds']:.0f} s "
        f"({figures['rate']:,.0f}/s, batches of {args.purge_batch}); reads meanwhile: "
        f"{figures['reads']:,.0f}, p50 {figures['p50_busy']:.1f} ms, p99 "
        f"{figures['p99_busy']:.1f} ms (before: {figures['p99_quiet']:.1f} ms) ≤ 50 ms: {verdict}"
    )
    drop(big)  # the purge changed it: the next run seeds again


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--pg-url", default=seed_scale.PG_URL)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "fc_scale")
    seed_scale.add_shape(parser)
    parser.add_argument("--limit", type=int, default=20, help="page size")
    parser.add_argument("--page", type=int, default=1_000, help="the deep page")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--documents", type=int, default=200)
    parser.add_argument("--baseline-seconds", type=float, default=5.0)
    parser.add_argument("--purge-batch", type=int, default=500)
    parser.add_argument(
        "--reuse", action="store_true", help="measure the databases a run left (--skip-purge)"
    )
    parser.add_argument("--skip-purge", action="store_true", help="and keep the databases")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    print(
        f"{args.transactions:,} transactions over {args.organisations:,} organisations "
        f"({args.big_share:.0%} in the large one), {args.events_per_transaction} events each; "
        f"cpus: {os.cpu_count()}"
    )
    for backend in args.backends.split(","):
        report(backend.strip(), args)


if __name__ == "__main__":
    main()
