"""Webhook delivery throughput and delay on PostgreSQL, one and two `fourcorner worker`s.

Phase 1 (throughput): N events are written to the outbox at once, spread round-robin over
``--receivers`` organisations, each with one webhook to a receiver of its own (an aiohttp
server on its own port, in this process); then the workers start. Deliveries/s is counted from
the first delivery's arrival to the last (and, beside it, from the workers' start, which adds
their 1-2 s start-up); the workers' CPU time per delivery from the first arrival on, too,
and beside it the receivers' (this process) and how busy the machine's cores were meanwhile
(PostgreSQL, the receivers and the workers share them).
Phase 2 (delay): events are raised at a steady rate while the workers run; the delay is
receipt time minus the event's createdAt.
Target (issue 17): >= 2,000 deliveries/s for one worker over 10 receivers.

``--baseline PYTHONPATH`` runs the workers of another version of the code too, in turn with this
one (``--rounds`` times), in the same run; ``--profile DIR`` records each worker with py-spy
from the first delivery to the last (raw profiles, ``bench/profile_summary.py`` reads them).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
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
from common import BIN, cpu_seconds, env_for, free_port, py_spy

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
from fourcorner.entrypoints.container import build_container, resolve, settle, web_app

PG_URL = "postgresql://postgres@127.0.0.1:5432/test"


class Receiver:
    def __init__(self) -> None:
        self.arrivals: dict[str, float] = {}
        self.delays: list[float] = []
        self.peers: set[object] = set()  # the workers' connections, by address and port

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        if request.transport is not None:
            self.peers.add(request.transport.get_extra_info("peername"))
        now = time.time()
        self.arrivals.setdefault(body["id"], now)
        created = datetime.fromisoformat(body["createdAt"].replace("Z", "+00:00")).timestamp()
        self.delays.append(now - created)
        return web.Response(status=200)


def _machine() -> tuple[int, int]:
    """The machine's busy and total jiffies over all its cores so far (``/proc/stat``)."""
    ticks = [int(t) for t in open("/proc/stat").readline().split()[1:]]  # noqa: SIM115
    return sum(ticks) - ticks[3] - ticks[4], sum(ticks)  # less idle and iowait


async def run(
    args: argparse.Namespace, workers: int, tmp: Path, code: str | None = None, tag: str = ""
) -> tuple[float, float, float, int, list[float], float, float]:
    """One measure; ``code``: a PYTHONPATH the workers run (another version of the code)."""
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
    worker_env = env | ({"PYTHONPATH": code} if code else {})
    container = build_container(Settings.load(env))
    await web_app(container)  # a server's start: the certificates the workers wait for
    ctx = await resolve(container.context)
    receiver = Receiver()
    app = web.Application()
    app.router.add_post("/in", receiver.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    ports = [free_port() for _ in range(args.receivers)]
    for port in ports:  # one receiver (host:port) per webhook
        await web.TCPSite(runner, "127.0.0.1", port).start()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        me = Principal(user=await users.sign_in(ctx, Identity("b", "b@example.com")))
        orgs = []
        for i, port in enumerate(ports):
            org = await organisations.create(
                ctx, me, CreateOrganisation(LEGAL_IDS[i], f"B{i}", "SE", "SE:ORGNR")
            )
            await webhooks.create(
                ctx,
                await resolve(container.sealer),
                me,
                org.id,
                CreateWebhook(f"http://127.0.0.1:{port}/in", ("webhook.test",)),
                WebhookSettings(allow_private_targets=True),
            )
            orgs.append(org.id)
        hooks = {org_id: await webhooks.webhooks_of(ctx, org_id) for org_id in orgs}
        for start in range(0, args.events, 500):
            async with ctx.uow() as uow:
                for i in range(start, min(args.events, start + 500)):
                    org_id = orgs[i % len(orgs)]
                    await webhooks.raise_event(
                        ctx, uow, org_id, "webhook.test", {"n": i}, hooks[org_id]
                    )
                await uow.commit()
        receiver.delays.clear()
        started = time.time()
        procs = [
            subprocess.Popen([str(BIN / "fourcorner"), "worker"], env=worker_env)  # noqa: ASYNC220
            for _ in range(workers)
        ]
        spies: list[subprocess.Popen[bytes]] = []
        cpu_at_first = None
        receivers_at_first, machine_at_first = 0.0, (0, 0)
        while len(receiver.arrivals) < args.events:
            await asyncio.sleep(0.01 if cpu_at_first is None else 0.05)
            if cpu_at_first is None and receiver.arrivals:
                cpu_at_first = sum(cpu_seconds(p.pid) for p in procs)
                receivers_at_first, machine_at_first = time.process_time(), _machine()
                if args.profile is not None:
                    spies = [
                        py_spy(p.pid, args.profile / f"webhooks-{tag}-w{workers}-{n}.txt")
                        for n, p in enumerate(procs)
                    ]
            if time.time() - started > 600:
                raise SystemExit("deliveries did not finish in 10 minutes")
        receivers_cpu = (time.process_time() - receivers_at_first) / args.events
        machine = _machine()
        busy = (machine[0] - machine_at_first[0]) / max(1, machine[1] - machine_at_first[1])
        for spy in spies:
            spy.send_signal(signal.SIGINT)
            spy.wait(timeout=60)
        first, last = min(receiver.arrivals.values()), max(receiver.arrivals.values())
        rate = (args.events - 1) / (last - first)  # from the first delivery to the last
        with_start = args.events / (last - started)  # from the workers' start
        while True:  # the last records may still be on their way
            async with ctx.uow() as uow:
                recorded = await uow.repository(DELIVERIES).count(status=DeliveryStatus.DELIVERED)
            if recorded == args.events:
                break
            await asyncio.sleep(0.05)
        connections = len(receiver.peers)  # opened by the workers to deliver them
        # CPU of the workers from the first delivery on (their start-up is not counted)
        cpu = (sum(cpu_seconds(p.pid) for p in procs) - (cpu_at_first or 0.0)) / args.events
        # phase 2: steady trickle, delay from creation to delivery
        receiver.delays.clear()
        for n in range(args.trickle):
            async with ctx.uow() as uow:
                org_id = orgs[n % len(orgs)]
                await webhooks.raise_event(
                    ctx, uow, org_id, "webhook.test", {"trickle": True}, hooks[org_id]
                )
                await uow.commit()
            await asyncio.sleep(1 / args.trickle_rate)
        await asyncio.sleep(1.0)
        return rate, with_start, cpu, connections, list(receiver.delays), receivers_cpu, busy
    finally:
        for p in procs:
            p.terminate()
            p.wait(timeout=30)
        await runner.cleanup()
        await settle(container.shutdown_resources())
        with psycopg.connect(args.pg_url, autocommit=True) as c:
            c.execute(f'DROP SCHEMA "{schema}" CASCADE')


# valid Swedish organisation numbers (Luhn), one organisation per receiver
LEGAL_IDS = [
    "2120000787", "5560360793", "5565475489", "5567037485", "5562642362",
    "5560125790", "5566574843", "5560743089", "5568542202", "5564065778",
]  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--events", type=int, default=10_000)
    p.add_argument("--trickle", type=int, default=300)
    p.add_argument("--trickle-rate", type=float, default=100.0)
    p.add_argument(
        "--receivers", type=int, default=10, choices=range(1, len(LEGAL_IDS) + 1), metavar="1-10"
    )
    p.add_argument("--workers", default="1,2", help="worker counts to measure, in turn")
    p.add_argument("--pg-url", default=PG_URL)
    p.add_argument(
        "--baseline",
        metavar="PYTHONPATH",
        help="run the workers of this other version of the code too, in turn with this one (a"
        " folder holding a `fourcorner` package, e.g. a worktree's .build/typecheck)",
    )
    p.add_argument("--rounds", type=int, default=1, help="this code and the baseline in turn")
    p.add_argument("--profile", type=Path, help="py-spy raw profiles of the workers here")
    args = p.parse_args()
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    codes: list[str | None] = [None] + ([args.baseline] if args.baseline else [])
    with tempfile.TemporaryDirectory() as t:
        for n, workers, code in (
            (n, w, c)
            for n in range(args.rounds)
            for w in map(int, args.workers.split(","))
            for c in codes
        ):
            tag = f"{'base' if code else 'this'}{n}"
            rate, with_start, cpu, connections, delays, receivers_cpu, busy = asyncio.run(
                run(args, workers, Path(t), code, tag)
            )
            delays.sort()
            p50 = statistics.median(delays) * 1000 if delays else float("nan")
            p99 = delays[int(len(delays) * 0.99) - 1] * 1000 if delays else float("nan")
            verdict = "ok" if rate >= 2000 or workers > 1 else "BELOW"
            print(
                f"{'baseline' if code else 'this    '} {workers} worker(s), {args.receivers} receivers: {rate:6.0f} deliveries/s"
                f" ({with_start:.0f}/s from the workers' start; {cpu * 1e6:.0f} µs of worker CPU"
                f" each, over {connections} connections; the receivers' process"
                f" {receivers_cpu * 1e6:.0f} µs; the machine's cores {busy:.0%} busy;"
                f" target >= 2,000 for one: {verdict})"
                f"   delay at {args.trickle_rate:.0f} events/s: p50 {p50:.1f} ms, p99 {p99:.1f} ms",
                flush=True,
            )


if __name__ == "__main__":
    main()
