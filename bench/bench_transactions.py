"""The four-corner loop on one machine: transactions posted to `fourcorner serve` (its
workers off) by organisation A, sent by one separate `fourcorner worker` over AS4 to the same
server's access point for organisation B, received (validated), acknowledged; 10 KB SBDs,
validation on (the default), SQLite and PostgreSQL.

Modes: ``burst`` (``--transactions`` posted ``--concurrency`` at a time: tx/s through the whole
loop, target >= 100) and ``rate@N`` (an open-loop arrival of N tx/s for ``--seconds``, each POST
sent at its time whatever the earlier ones did: POST -> COMPLETED p50 <= 1 s and p99 <= 3 s at
50 tx/s). COMPLETED is seen by polling the sender's list every 0.1 s (at most one poll late).
``--loops whole`` runs the loop the issue names (intake, lookup, AS4 out, receipt, AS4 in,
MLS, webhooks): each document asks for a status (``MLS_TYPE`` ``ALWAYS_SEND``), so B's access
point sends an AB back to A's over AS4, and both organisations have a webhook at a receiver in
this process (A: ``transaction.sent`` and ``mls.received``, B: ``transaction.received``); a
transaction is done when the last of its three webhooks arrives (no polling then).
Each figure comes with the CPU time per transaction of serve, of its validation workers, of
the worker, of the local PostgreSQL server (its backends serving those processes, and its own
processes: WAL writer, checkpointer, ...) and of this process (the load generator), their sum
(where the machine's time goes per transaction) and the machine's load average. ``--payloads invoice,order`` runs the loop
with a BIS Order 3 too, in turn with the invoice: the published rules apply to billing documents
only, so an order of the same size is the loop with validation off, measured in the same run.
``--baseline PYTHONPATH`` measures another version
of the code in turn with this one (``--rounds``), in the same run; ``--profile DIR`` writes
py-spy profiles of serve (with its validation workers) and the worker
(``bench/profile_summary.py`` reads them). Also: the server's peak memory while taking in one
large SBD (target: <= 3x the file size).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import psycopg
from aiohttp import web
from common import BIN, env_for, free_port, py_spy, stop, wait_ready
from common import cpu_seconds as process_cpu

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from sbd_factory import make_sbd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
from fourcorner.domain.checkdigits import gs1_check_digit

PG_URL = "postgresql://postgres@127.0.0.1:5432/test"
INVOICE = "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2::Invoice##urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0::2.1"
BILLING = "cenbii-procid-ubl::urn:fdc:peppol.eu:2017:poacc:billing:01:1.0"
ORDER = "urn:oasis:names:specification:ubl:schema:xsd:Order-2::Order##urn:fdc:peppol.eu:poacc:trns:order:3::2.1"
ORDERING = "cenbii-procid-ubl::urn:fdc:peppol.eu:poacc:bis:ordering:3"
# a BIS Order 3 (no published rules apply to it, so the loop carries it unvalidated)
ORDER_XML = """<?xml version="1.0" encoding="UTF-8"?>
<Order xmlns="urn:oasis:names:specification:ubl:schema:xsd:Order-2"
    xmlns:cac="urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2"
    xmlns:cbc="urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2">
  <cbc:CustomizationID>urn:fdc:peppol.eu:poacc:trns:order:3</cbc:CustomizationID>
  <cbc:ProfileID>urn:fdc:peppol.eu:poacc:bis:ordering:3</cbc:ProfileID>
  <cbc:ID>bench-1</cbc:ID>
  <cbc:IssueDate>2026-11-25</cbc:IssueDate>
  <cbc:DocumentCurrencyCode>SEK</cbc:DocumentCurrencyCode>
  <cac:BuyerCustomerParty><cac:Party>
    <cbc:EndpointID schemeID="0088">{buyer}</cbc:EndpointID>
    <cac:PartyLegalEntity><cbc:RegistrationName>Buyer</cbc:RegistrationName></cac:PartyLegalEntity>
  </cac:Party></cac:BuyerCustomerParty>
  <cac:SellerSupplierParty><cac:Party>
    <cbc:EndpointID schemeID="0088">{seller}</cbc:EndpointID>
    <cac:PartyLegalEntity><cbc:RegistrationName>Seller</cbc:RegistrationName></cac:PartyLegalEntity>
  </cac:Party></cac:SellerSupplierParty>
  <cac:AnticipatedMonetaryTotal>
    <cbc:PayableAmount currencyID="SEK">100.00</cbc:PayableAmount>
  </cac:AnticipatedMonetaryTotal>
  <cac:OrderLine><cac:LineItem>
    <cbc:ID>1</cbc:ID>
    <cbc:Quantity unitCode="EA">1</cbc:Quantity>
    <cbc:LineExtensionAmount currencyID="SEK">100.00</cbc:LineExtensionAmount>
    <cac:Item><cbc:Name>Paper</cbc:Name></cac:Item>
  </cac:LineItem></cac:OrderLine>
</Order>
"""
# --payloads: the SBDH's document type and process, and the business document (None: the
# BIS Billing 3 base example invoice)
PAYLOADS: dict[str, tuple[str, str]] = {"invoice": (INVOICE, BILLING), "order": (ORDER, ORDERING)}


def gln(n: int) -> str:
    payload = f"730003{n:06d}"
    return f"0088:{payload}{gs1_check_digit(payload)}"


def token(env: dict[str, str], email: str) -> str:
    out = subprocess.run(
        [str(BIN / "fourcorner"), "token", "--email", email],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


async def call(
    s: aiohttp.ClientSession,
    method: str,
    url: str,
    tok: str,
    *,
    headers: dict[str, str] | None = None,
    **kw: Any,
) -> tuple[int, Any]:
    auth = {"Authorization": f"Bearer {tok}", **(headers or {})}
    async with s.request(method, url, headers=auth, **kw) as r:
        return r.status, await r.json()


async def setup(
    s: aiohttp.ClientSession, base: str, tok: str, legal: str, ident: str
) -> tuple[str, str]:
    _, org = await call(
        s,
        "POST",
        base + "/orgs",
        tok,
        json={
            "legalIdentifier": legal,
            "legalName": "Bench",
            "countryCode": "SE",
            "legalIdentifierCode": "SE:ORGNR",
        },
    )
    oid = org["id"]
    _, smps = await call(s, "GET", f"{base}/orgs/{oid}/smps/alltouse", tok)
    _, aps = await call(s, "GET", f"{base}/orgs/{oid}/aps/alltouse", tok)
    smp, ap = smps["items"][0]["id"], aps["items"][0]["id"]
    _, p = await call(
        s,
        "POST",
        f"{base}/orgs/{oid}/participants",
        tok,
        json={"name": "p", "participantIdentifier": ident, "smpRef": smp, "apRef": ap},
    )
    _, docs = await call(s, "GET", f"{base}/document_types?state=active&limit=500", tok)
    ids = {d["value"]: d["id"] for d in docs["items"]}
    supported = [{"documentId": ids[v], "processId": process} for v, process in PAYLOADS.values()]
    await call(
        s,
        "PUT",
        f"{base}/orgs/{oid}/participants/{p['id']}/supported_document_types",
        tok,
        json={"supportedDocumentTypes": supported},
    )
    return oid, ap


class Hooks:
    """The webhook receiver of the whole loop: A hears ``transaction.sent`` and
    ``mls.received`` of each document it sends, B ``transaction.received``; a transaction is
    done when all three arrived (the time of the last). The documents ask for a status
    (``MLS_TYPE`` ``ALWAYS_SEND``), so B's access point sends an AB back to A's over AS4: the
    loop of the issue (intake, lookup, AS4 out, receipt, AS4 in, MLS, webhooks)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/hook"
        self.heard: dict[str, dict[str, float]] = {}  # A's transaction id -> event -> time
        self.instances: dict[str, str] = {}  # docInstanceId -> A's transaction id
        self.early: dict[str, float] = {}  # transaction.received heard before A's sent
        self.problems: list[str] = []

    async def start(self) -> None:
        app = web.Application(client_max_size=4 * 1024 * 1024)
        app.router.add_post("/hook", self.handle)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", self.port).start()

    async def stop(self) -> None:
        await self.runner.cleanup()

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        now, name, payload = time.time(), body["eventType"], body["payload"]
        if name == "transaction.sent":
            self.instances[payload["docInstanceId"]] = payload["id"]
            self.heard.setdefault(payload["id"], {})[name] = now
            if (at := self.early.pop(payload["docInstanceId"], None)) is not None:
                self.heard[payload["id"]]["transaction.received"] = at
        elif name == "mls.received":
            if payload["mlsResponseCode"] != "AB":
                self.problems.append(f"an MLS {payload['mlsResponseCode']}: {payload}")
            self.heard.setdefault(payload["transactionId"], {})[name] = now
        elif name == "transaction.received":
            if payload.get("valid") is not True:
                self.problems.append(f"received not valid: {payload}")
            sent = self.instances.get(payload["docInstanceId"])
            if sent is None:
                self.early[payload["docInstanceId"]] = now
            else:
                self.heard.setdefault(sent, {})[name] = now
        return web.Response(status=200)

    def check(self, posted: dict[str, float], done: dict[str, float]) -> None:
        """Each transaction of ``posted`` whose three webhooks arrived marked ``done`` (at
        the last), and no longer looked at."""
        if self.problems:
            raise SystemExit(self.problems[0])
        for tx_id in [t for t, events in self.heard.items() if len(events) == 3 and t in posted]:
            done.setdefault(tx_id, max(self.heard.pop(tx_id).values()))


class Loop:
    """Organisation A sends to organisation B on the same server; ``posted`` and ``done``
    are the (intended) POST time and the time COMPLETED was seen, by transaction id."""

    def __init__(
        self,
        base: str,
        env: dict[str, str],
        size: int,
        kind: str = "invoice",
        hooks: Hooks | None = None,
    ) -> None:
        self.base = base
        self.kind = kind
        self.env = env
        self.size = size
        self.hooks = hooks  # the whole loop: a status asked for, webhooks heard
        self.posted: dict[str, float] = {}
        self.done: dict[str, float] = {}
        self.failures = 0

    async def __aenter__(self) -> Loop:
        self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        self.ta, tb = token(self.env, "a@example.com"), token(self.env, "b@example.com")
        self.org, self.ap = await setup(self.session, self.base, self.ta, "2120000787", gln(1))
        org_b, _ = await setup(self.session, self.base, tb, "5560360793", gln(2))
        if self.hooks is not None:
            await self.hooks.start()
            for org, tok, names in (
                (self.org, self.ta, ["transaction.sent", "mls.received"]),
                (org_b, tb, ["transaction.received"]),
            ):
                status, body = await call(
                    self.session,
                    "POST",
                    f"{self.base}/orgs/{org}/webhooks",
                    tok,
                    json={"url": self.hooks.url, "events": names},
                )
                if status != 201:
                    raise SystemExit(f"POST webhooks answered {status}: {body}")
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.session.close()
        if self.hooks is not None:
            await self.hooks.stop()

    def payloads(self, n: int, kind: str = "invoice") -> list[bytes]:
        document, process = PAYLOADS[kind]
        body = None
        if kind == "order":
            body = ORDER_XML.format(buyer=gln(1), seller=gln(2)).encode()
        return [
            make_sbd(
                sender=gln(1),
                receiver=gln(2),
                document=document,
                process=process.partition("::")[2],  # the value; make_sbd adds the scheme
                payload=body,
                pad_to=self.size or None,
                # the whole loop: the receiving access point sends a status back (AB)
                mls_type="ALWAYS_SEND" if self.hooks is not None else None,
            )
            for _ in range(n)
        ]

    async def post(self, sbd: bytes, at: float) -> None:
        status, body = await call(
            self.session,
            "POST",
            f"{self.base}/orgs/{self.org}/transactions?ap={self.ap}",
            self.ta,
            data=sbd,
            headers={"Content-Type": "application/xml"},
        )
        if status != 202:
            raise SystemExit(f"POST answered {status}: {body}")
        self.posted[body["transactionId"]] = at

    async def poll(self, since: float) -> None:
        """Mark the transactions seen COMPLETED; only those created after ``since`` are read."""
        cursor = None
        stamp = datetime.fromtimestamp(since, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        while True:
            q = (
                f"{self.base}/orgs/{self.org}/transactions/to_network?limit=500"
                "&filter=transactionStatus:in:COMPLETED|FAILED"
                f"&filter=createdAt:gte:{stamp}"
            )
            _, page = await call(
                self.session, "GET", q + (f"&cursor={cursor}" if cursor else ""), self.ta
            )
            now = time.time()
            for t in page["items"]:
                if t["transactionStatus"] == "FAILED":
                    raise SystemExit(f"a transaction failed: {t}")
                self.done.setdefault(t["id"], now)  # seen at most one poll late
            cursor = page["nextCursor"]
            if not cursor:
                return

    async def until_done(self, n: int, started: float, poster: asyncio.Future[Any]) -> None:
        while len([i for i in self.posted if i in self.done]) < n or not poster.done():
            await asyncio.sleep(0.1)  # reads only what was created since the oldest pending
            if self.hooks is not None:  # done as the last of its webhooks arrives
                self.hooks.check(self.posted, self.done)
            else:
                pending = [t for i, t in self.posted.items() if i not in self.done]
                await self.poll(min(pending, default=time.time()) - 2)
            if time.time() - started > 900:
                raise SystemExit("the loop did not finish in 15 minutes")
        await poster

    def figures(self, ids: list[str], started: float) -> dict[str, float]:
        lat = sorted(self.done[i] - self.posted[i] for i in ids)
        finished = max(self.done[i] for i in ids)
        return {
            "tx/s": len(ids) / (finished - started),
            "p50": statistics.median(lat),
            "p99": lat[max(0, int(len(lat) * 0.99) - 1)],
        }

    async def burst(self, n: int, concurrency: int) -> dict[str, float]:
        """``n`` transactions posted ``concurrency`` at a time, as fast as they are taken."""
        payloads = self.payloads(n, self.kind)
        before = set(self.posted)
        gate = asyncio.Semaphore(concurrency)

        async def one(sbd: bytes) -> None:
            async with gate:
                await self.post(sbd, time.time())

        started = time.time()
        poster = asyncio.ensure_future(asyncio.gather(*(one(p) for p in payloads)))
        await self.until_done(len(before) + n, started, poster)
        return self.figures([i for i in self.posted if i not in before], started)

    async def arrivals(self, rate: float, seconds: float) -> dict[str, float]:
        """Open-loop arrival: one POST every ``1/rate`` s for ``seconds``, each sent at its
        time whether or not the earlier ones were answered; latency counts from that time
        (a late POST does not hide the queue in front of it)."""
        n = int(rate * seconds)
        payloads = self.payloads(n, self.kind)
        before = set(self.posted)
        started = time.time() + 0.1

        async def arrive() -> None:
            tasks = []
            for i, sbd in enumerate(payloads):
                at = started + i / rate
                await asyncio.sleep(max(0.0, at - time.time()))
                tasks.append(asyncio.ensure_future(self.post(sbd, at)))
            await asyncio.gather(*tasks)

        poster = asyncio.ensure_future(arrive())  # polled for completions meanwhile
        await self.until_done(len(before) + n, started, poster)
        figures = self.figures([i for i in self.posted if i not in before], started)
        figures["offered"] = rate
        return figures


def start(
    env: dict[str, str], port: int, profile: Path | None, name: str
) -> list[subprocess.Popen[bytes]]:
    """``fourcorner serve`` with its workers off, and one ``fourcorner worker``."""
    procs = [
        subprocess.Popen(
            [str(BIN / "fourcorner"), "serve"], env=env | {"FOURCORNER_WORKERS": "false"}
        )
    ]
    wait_ready(f"http://127.0.0.1:{port}/readyz", procs[0])
    procs.append(subprocess.Popen([str(BIN / "fourcorner"), "worker"], env=env))
    return procs


def record(
    procs: list[subprocess.Popen[bytes]], out: Path, seconds: float
) -> list[subprocess.Popen[bytes]]:
    """py-spy sampling each process (and its validation workers) for ``seconds``."""
    return [
        py_spy(p.pid, out.with_suffix(f".{role}.txt"), seconds=seconds, subprocesses=True)
        for p, role in zip(procs, ("serve", "worker"), strict=True)
    ]


def run(
    args: argparse.Namespace,
    backend: str,
    code: str | None,
    workdir: Path,
    profile: Path | None,
    kind: str = "invoice",
    whole: bool = False,
) -> dict[str, dict[str, float]]:
    """The figures of one backend and one version of the code (``code``: a PYTHONPATH to run,
    None: this checkout), with documents of one kind (``PAYLOADS``); ``whole``: the loop with
    a status sent back and webhooks heard (``Hooks``)."""
    port = free_port()
    extra = {"FOURCORNER_PUBLIC_URL": f"http://127.0.0.1:{port}", **dict(args.set)}
    if whole:  # the load generator's receiver listens on this machine
        extra["FOURCORNER_WEBHOOK_ALLOW_PRIVATE_TARGETS"] = "true"
    if code is not None:
        extra["PYTHONPATH"] = code
    schema = None
    if backend == "postgres":
        schema = f"fc_bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(args.pg_url, autocommit=True) as c:
            c.execute(f'CREATE SCHEMA "{schema}"')
        extra |= {"FOURCORNER_DATABASE_URL": args.pg_url, "FOURCORNER_DATABASE_SCHEMA": schema}
    env = env_for(workdir / f"{backend}-{uuid.uuid4().hex[:6]}", port, **extra)
    procs = start(env, port, profile, backend)
    out: dict[str, dict[str, float]] = {}
    try:

        async def measure() -> None:
            hooks = Hooks() if whole else None
            async with Loop(f"http://127.0.0.1:{port}", env, args.size, kind, hooks) as lp:
                await lp.burst(args.warmup, args.warmup)  # rules compiled, connections open
                cpu0 = cpu_seconds(procs)
                for mode in args.modes.split(","):
                    spies = []
                    if profile is not None:
                        label = f"{kind}-whole" if whole else kind
                        name = profile / f"{backend}-{'base' if code else 'this'}-{label}-{mode}"
                        spies = record(procs, name, args.profile_seconds)
                    if mode == "burst":
                        out[mode] = await lp.burst(args.transactions, args.concurrency)
                        n = args.transactions
                    else:
                        rate = _rate(mode)
                        out[mode] = await lp.arrivals(rate, args.seconds)
                        n = int(rate * args.seconds)
                    cpu1 = cpu_seconds(procs)
                    for role in cpu1:
                        out[mode][f"cpu {role}"] = 1000 * (cpu1[role] - cpu0[role]) / n
                    out[mode]["cpu/tx ms"] = sum(out[mode][f"cpu {r}"] for r in cpu1)
                    out[mode]["load"] = os.getloadavg()[0]
                    cpu0 = cpu_seconds(procs)
                    for spy in spies:
                        spy.wait()

        asyncio.run(measure())
    finally:
        for proc in reversed(procs):
            stop(proc)
        if schema:
            with psycopg.connect(args.pg_url, autocommit=True) as c:
                c.execute(f'DROP SCHEMA "{schema}" CASCADE')
    return out


def cpu_seconds(procs: list[subprocess.Popen[bytes]]) -> dict[str, float]:
    """User and system CPU time of serve, of its children (the validation workers), of the
    worker (with its children), of the PostgreSQL server for them (``postgres_cpu``) and of
    this process, the load generator."""
    validators = _tree([int(c) for c in _children(procs[0].pid)])
    worker = _tree([procs[1].pid])
    return {
        "serve": _cpu([procs[0].pid]),
        "validators": _cpu(validators),
        "worker": _cpu(worker),
        "postgres": postgres_cpu([procs[0].pid, *validators, *worker, os.getpid()]),
        "load generator": process_cpu(os.getpid()),
    }


def postgres_cpu(clients: list[int]) -> float:
    """CPU time of the local PostgreSQL server's backends serving ``clients`` (those whose
    client port is a port of theirs connected to 5432; the server names it in their command
    line) and of its processes serving none (WAL writer, checkpointer, autovacuum, ...: the
    whole server's, other clients' work too). Backends that ended are not counted (the pools
    keep theirs open); 0 when no such server is seen."""
    ports = _ports_to(5432, clients)
    total = 0.0
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):  # the process ended
            if (cmdline.parent / "comm").read_text().strip() != "postgres":
                continue
            title = cmdline.read_bytes().decode(errors="replace")
            client = re.search(r"\((\d+)\)", title)
            if client is None or int(client[1]) in ports:
                total += process_cpu(int(cmdline.parent.name))
    return total


def _ports_to(server_port: int, pids: list[int]) -> set[int]:
    """The local TCP ports of ``pids``' sockets connected to ``server_port``."""
    inodes: set[str] = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    target = os.readlink(fd)
                    if target.startswith("socket:["):
                        inodes.add(target[8:-1])
    ports: set[int] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                local, remote, inode = fields[1], fields[2], fields[9]
                if inode in inodes and int(remote.rsplit(":", 1)[1], 16) == server_port:
                    ports.add(int(local.rsplit(":", 1)[1], 16))
    return ports


def _tree(pids: list[int]) -> list[int]:
    """``pids`` and their descendants."""
    found = list(pids)
    for pid in found:  # grows as it goes
        found += [int(c) for c in _children(pid)]
    return found


def _cpu(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        with contextlib.suppress(OSError):  # the process ended
            total += process_cpu(pid)
    return total


def _children(pid: int) -> list[str]:
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):  # the task ended
            out += (task / "children").read_text().split()
    return out


def serve(env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([str(BIN / "fourcorner"), "serve"], env=env)
    wait_ready(f"http://127.0.0.1:{port}/readyz", proc)
    return proc


def peak_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


async def intake_memory(base: str, env: dict[str, str], pid: int, mib: int) -> tuple[int, int]:
    ta = token(env, "m@example.com")
    async with aiohttp.ClientSession() as s:
        a, ap = await setup(s, base, ta, "5567037485", gln(3))
        big = make_sbd(sender=gln(3), receiver=gln(2), pad_to=mib * 1024 * 1024)
        before = peak_rss_kib(pid)
        status, body = await call(
            s,
            "POST",
            f"{base}/orgs/{a}/transactions?ap={ap}",
            ta,
            data=big,
            headers={"Content-Type": "application/xml"},
        )
        assert status == 202, body
        return len(big), (peak_rss_kib(pid) - before) * 1024


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--backends", default="postgres,sqlite")
    p.add_argument(
        "--modes",
        default="burst,rate@50,rate@10",
        help="burst; rate@N: open-loop arrival of N tx/s for --seconds",
    )
    p.add_argument("--transactions", type=int, default=1000, help="in the burst")
    p.add_argument("--concurrency", type=int, default=16, help="POSTs at once in the burst")
    p.add_argument("--seconds", type=float, default=20, help="of arrivals in rate mode")
    p.add_argument("--size", type=int, default=10240, help="bytes of each SBD (0: unpadded)")
    p.add_argument("--warmup", type=int, default=8)
    p.add_argument("--rounds", type=int, default=1, help="this code and the baseline in turn")
    p.add_argument(
        "--baseline",
        metavar="PYTHONPATH",
        help="measure this other version of the code too, in turn with this one (a folder "
        "holding a `fourcorner` package, e.g. another checkout's .build/typecheck)",
    )
    p.add_argument("--profile", type=Path, help="py-spy raw profiles of serve and worker here")
    p.add_argument("--profile-seconds", type=float, default=15)
    p.add_argument("--big-mib", type=int, default=50, help="0: skip the intake memory figure")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        type=lambda text: tuple(text.split("=", 1)),
        metavar="NAME=VALUE",
        help="a setting for serve and worker, e.g. FOURCORNER_VALIDATION_CACHE_MIB=0",
    )
    p.add_argument(
        "--payloads",
        default="invoice",
        help="invoice (validated), order (no rules apply: the loop without validation), or both",
    )
    p.add_argument(
        "--loops",
        default="document",
        help="document (the document there and its receipt back, as measured since the"
        " start), whole (also a status sent back, MLS_TYPE ALWAYS_SEND, and the three"
        " webhooks, transaction.sent, transaction.received and mls.received, heard by this"
        " process: done when the last arrives), or both, in turn",
    )
    p.add_argument("--pg-url", default=PG_URL)
    args = p.parse_args()
    payloads = args.payloads.split(",")
    if unknown := set(payloads) - set(PAYLOADS):
        p.error(f"--payloads: unknown {', '.join(sorted(unknown))}; known: {', '.join(PAYLOADS)}")
    loops = args.loops.split(",")
    if unknown := set(loops) - {"document", "whole"}:
        p.error(f"--loops: unknown {', '.join(sorted(unknown))}; known: document, whole")
    # each payload over each loop, labelled "invoice", "invoice/whole", ...
    kinds = [k if loop == "document" else f"{k}/whole" for k in payloads for loop in loops]
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    codes: list[str | None] = [None] if not args.baseline else [args.baseline, None]
    results: dict[tuple[str, str | None, str, str], list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as t:
        for backend in args.backends.split(","):
            for _ in range(args.rounds):
                for code in codes:
                    for kind in kinds:
                        payload, _, whole = kind.partition("/")
                        figures = run(
                            args, backend, code, Path(t), args.profile, payload, bool(whole)
                        )
                        for mode, f in figures.items():
                            results.setdefault((backend, code, kind, mode), []).append(f)
                            print(
                                f"  {backend} {'baseline' if code else 'this'} {kind} {mode}:"
                                f" {_fmt(f)}",
                                flush=True,
                            )
        print(
            f"\n{args.size} B SBDs, validation on, serve (workers off) + one worker; medians of {args.rounds} round(s)"
        )
        for backend in args.backends.split(","):
            for mode in args.modes.split(","):
                for kind in kinds:
                    this = _median(results[(backend, None, kind, mode)])
                    line = f"{backend:9} {kind:13} {mode:5} {_fmt(this)}"
                    if args.baseline:
                        base = _median(results[(backend, args.baseline, kind, mode)])
                        line += (
                            f"  | baseline {_fmt(base)}  ({this['tx/s'] / base['tx/s']:.2f}x tx/s)"
                        )
                    if kind.startswith("invoice"):
                        line += "  " + _verdict(mode, this)
                    print(line)
                if {"invoice", "order"} <= set(kinds):
                    on = _median(results[(backend, None, "invoice", mode)])
                    off = _median(results[(backend, None, "order", mode)])
                    print(
                        f"{backend:9} {mode:5} validation on / off: {on['tx/s'] / off['tx/s']:.2f}x"
                        f" tx/s, {on['cpu/tx ms'] / off['cpu/tx ms']:.2f}x CPU per transaction"
                    )
        if args.big_mib:
            for backend in args.backends.split(","):
                intake(args, backend, Path(t))


def _fmt(f: dict[str, float]) -> str:
    return (
        f"{f['tx/s']:6.1f} tx/s p50 {f['p50'] * 1000:5.0f} ms p99 {f['p99'] * 1000:5.0f} ms"
        f" cpu {f['cpu/tx ms']:4.1f} ms/tx (serve {f['cpu serve']:.1f}, validators"
        f" {f['cpu validators']:.1f}, worker {f['cpu worker']:.1f}, postgres"
        f" {f['cpu postgres']:.1f}, load generator {f['cpu load generator']:.1f})"
        f" load {f['load']:.1f}"
    )


def _median(runs: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def _rate(mode: str) -> float:
    return float(mode.partition("@")[2] or 50)


def _verdict(mode: str, f: dict[str, float]) -> str:
    if mode == "burst":
        return f"(target >= 100 tx/s: {'ok' if f['tx/s'] >= 100 else 'BELOW'})"
    rate = _rate(mode)
    kept_up = f["tx/s"] >= 0.95 * rate
    ok = f["p50"] <= 1 and f["p99"] <= 3 and kept_up
    return (
        f"(target p50 <= 1 s, p99 <= 3 s, kept up with {rate:g} tx/s: {'ok' if ok else 'MISSED'})"
    )


def intake(args: argparse.Namespace, backend: str, workdir: Path) -> None:
    """Peak memory of the server (workers off, so only the intake) taking in one big SBD."""
    port = free_port()
    extra = {"FOURCORNER_PUBLIC_URL": f"http://127.0.0.1:{port}", "FOURCORNER_WORKERS": "false"}
    schema = None
    if backend == "postgres":
        schema = f"fc_bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(args.pg_url, autocommit=True) as c:
            c.execute(f'CREATE SCHEMA "{schema}"')
        extra |= {"FOURCORNER_DATABASE_URL": args.pg_url, "FOURCORNER_DATABASE_SCHEMA": schema}
    env = env_for(workdir / f"{backend}-big", port, **extra)
    proc = serve(env, port)
    try:
        size, grew = asyncio.run(
            intake_memory(f"http://127.0.0.1:{port}", env, proc.pid, args.big_mib)
        )
    finally:
        stop(proc)
        if schema:
            with psycopg.connect(args.pg_url, autocommit=True) as c:
                c.execute(f'DROP SCHEMA "{schema}" CASCADE')
    print(
        f"{backend:9} intake of a {size / 2**20:.0f} MiB SBD: peak RSS grew {grew / 2**20:.1f} MiB"
        f" = {grew / size:.2f}x the file (target <= 3x)"
    )


if __name__ == "__main__":
    main()
