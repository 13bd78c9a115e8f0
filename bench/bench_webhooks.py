"""Webhook delivery throughput and delay on PostgreSQL, one and two `fourcorner worker`s.

Phase 1 (throughput): N events are written to the outbox at once, then the workers start;
deliveries/s is N over the time to deliver them all. Phase 2 (delay): events are raised at a
steady rate while one worker runs; the delay is receipt time minus the event's createdAt.
Target (issue "Webhooks"): >= 500 deliveries/s for one worker.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime
from pathlib import Path

import psycopg
from aiohttp import web
from common import BIN, env_for, free_port

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from fourcorner.adapters.pki import ensure_test_pki
from fourcorner.application import organisations, users, webhooks
from fourcorner.application.access import Principal
from fourcorner.application.collections import DELIVERIES
from fourcorner.application.identity import Identity
from fourcorner.application.organisations import CreateOrganisation
from fourcorner.application.webhooks import CreateWebhook, WebhookSettings
from fourcorner.domain.webhook import DeliveryStatus
from fourcorner.entrypoints.config import Settings
from fourcorner.entrypoints.container import build_container, resolve

PG_URL = "postgresql://postgres@127.0.0.1:5432/test"


class Receiver:
    def __init__(self) -> None:
        self.arrivals: dict[str, float] = {}
        self.delays: list[float] = []

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        now = time.time()
        self.arrivals.setdefault(body["id"], now)
        created = datetime.fromisoformat(body["createdAt"].replace("Z", "+00:00")).timestamp()
        self.delays.append(now - created)
        return web.Response(status=200)


async def run(args: argparse.Namespace, workers: int, tmp: Path) -> tuple[float, list[float]]:
    schema = f"fc_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(args.pg_url, autocommit=True) as c:
        c.execute(f'CREATE SCHEMA "{schema}"')
    data = tmp / f"w{workers}"
    ensure_test_pki(data)
    env = env_for(
        data,
        free_port(),
        FOURCORNER_DATABASE_URL=args.pg_url,
        FOURCORNER_DATABASE_SCHEMA=schema,
        FOURCORNER_WEBHOOK_ALLOW_PRIVATE_TARGETS="true",
    )
    container = build_container(Settings.load(env))
    await container.init_resources()
    ctx = await resolve(container.context)
    receiver = Receiver()
    app = web.Application()
    app.router.add_post("/in", receiver.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        me = Principal(user=await users.sign_in(ctx, Identity("b", "b@example.com")))
        org = await organisations.create(
            ctx, me, CreateOrganisation("2120000787", "B", "SE", "SE:ORGNR")
        )
        await webhooks.create(
            ctx,
            await resolve(container.sealer),
            me,
            org.id,
            CreateWebhook(f"http://127.0.0.1:{port}/in", ("webhook.test",)),
            WebhookSettings(allow_private_targets=True),
        )
        for start in range(0, args.events, 500):
            async with ctx.uow() as uow:
                for i in range(start, min(args.events, start + 500)):
                    await webhooks.raise_event(ctx, uow, org.id, "webhook.test", {"n": i})
                await uow.commit()
        receiver.delays.clear()
        started = time.time()
        procs = [
            subprocess.Popen([str(BIN / "fourcorner"), "worker"], env=env)  # noqa: ASYNC220
            for _ in range(workers)
        ]
        while len(receiver.arrivals) < args.events:
            await asyncio.sleep(0.05)
            if time.time() - started > 600:
                raise SystemExit("deliveries did not finish in 10 minutes")
        elapsed = max(receiver.arrivals.values()) - started
        rate = args.events / elapsed
        while True:  # the last records may still be on their way
            async with ctx.uow() as uow:
                recorded = await uow.repository(DELIVERIES).count(status=DeliveryStatus.DELIVERED)
            if recorded == args.events:
                break
            await asyncio.sleep(0.05)
        # phase 2: steady trickle, delay from creation to delivery
        receiver.delays.clear()
        for _ in range(args.trickle):
            async with ctx.uow() as uow:
                await webhooks.raise_event(ctx, uow, org.id, "webhook.test", {"trickle": True})
                await uow.commit()
            await asyncio.sleep(1 / args.trickle_rate)
        await asyncio.sleep(1.0)
        return rate, list(receiver.delays)
    finally:
        for p in procs:
            p.terminate()
            p.wait(timeout=30)
        await runner.cleanup()
        await container.shutdown_resources()
        with psycopg.connect(args.pg_url, autocommit=True) as c:
            c.execute(f'DROP SCHEMA "{schema}" CASCADE')


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--events", type=int, default=10_000)
    p.add_argument("--trickle", type=int, default=300)
    p.add_argument("--trickle-rate", type=float, default=100.0)
    p.add_argument("--pg-url", default=PG_URL)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as t:
        for workers in (1, 2):
            rate, delays = asyncio.run(run(args, workers, Path(t)))
            delays.sort()
            p50 = statistics.median(delays) * 1000 if delays else float("nan")
            p99 = delays[int(len(delays) * 0.99) - 1] * 1000 if delays else float("nan")
            verdict = "ok" if rate >= 500 or workers > 1 else "BELOW"
            print(
                f"{workers} worker(s): {rate:8.0f} deliveries/s  (target >= 500: {verdict})"
                f"   delay at {args.trickle_rate:.0f} events/s: p50 {p50:.1f} ms, p99 {p99:.1f} ms"
            )


if __name__ == "__main__":
    main()
