"""The four-corner loop on one machine: N transactions posted to `fourcorner serve`, sent over
AS4 to the same server's access point, received, acknowledged. Prints transactions/s and the
p50/p99 time from POST to COMPLETED (targets: >= 20 tx/s on SQLite and on PostgreSQL), and the
server's peak memory while taking in one large SBD (target: <= 3x the file size).
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
from pathlib import Path

import aiohttp
import psycopg
from common import BIN, env_for, free_port, wait_ready

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from sbd_factory import make_sbd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
from fourcorner.domain.checkdigits import gs1_check_digit

PG_URL = "postgresql://postgres@127.0.0.1:5432/test"
INVOICE = "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2::Invoice##urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0::2.1"
BILLING = "cenbii-procid-ubl::urn:fdc:peppol.eu:2017:poacc:billing:01:1.0"


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
    **kw: object,
) -> tuple[int, object]:
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
    oid = org["id"]  # type: ignore[index]
    _, smps = await call(s, "GET", f"{base}/orgs/{oid}/smps/alltouse", tok)
    _, aps = await call(s, "GET", f"{base}/orgs/{oid}/aps/alltouse", tok)
    smp, ap = smps["items"][0]["id"], aps["items"][0]["id"]  # type: ignore[index]
    _, p = await call(
        s,
        "POST",
        f"{base}/orgs/{oid}/participants",
        tok,
        json={"name": "p", "participantIdentifier": ident, "smpRef": smp, "apRef": ap},
    )
    _, docs = await call(s, "GET", f"{base}/document_types?filter=state:eq:active", tok)
    doc = next(d for d in docs["items"] if d["value"] == INVOICE)  # type: ignore[index]
    await call(
        s,
        "PUT",
        f"{base}/orgs/{oid}/participants/{p['id']}/supported_document_types",
        tok,  # type: ignore[index]
        json={"supportedDocumentTypes": [{"documentId": doc["id"], "processId": BILLING}]},
    )
    return oid, ap


async def loop(
    base: str, env: dict[str, str], n: int, concurrency: int
) -> tuple[float, list[float]]:
    ta, tb = token(env, "a@example.com"), token(env, "b@example.com")
    async with aiohttp.ClientSession() as s:
        a, ap = await setup(s, base, ta, "2120000787", gln(1))
        await setup(s, base, tb, "5560360793", gln(2))
        payloads = [make_sbd(sender=gln(1), receiver=gln(2)) for _ in range(n)]
        posted: dict[str, float] = {}
        done: dict[str, float] = {}
        gate = asyncio.Semaphore(concurrency)

        async def post(sbd: bytes) -> None:
            async with gate:
                t0 = time.time()
                status, body = await call(
                    s,
                    "POST",
                    f"{base}/orgs/{a}/transactions?ap={ap}",
                    ta,
                    data=sbd,
                    headers={"Content-Type": "application/xml"},
                )
                assert status == 202, body
                posted[body["transactionId"]] = t0  # type: ignore[index]

        started = time.time()
        poster = asyncio.gather(*(post(p) for p in payloads))
        while len(done) < n:
            await asyncio.sleep(0.1)
            cursor = None
            while True:
                q = f"{base}/orgs/{a}/transactions/to_network?limit=500&filter=transactionStatus:in:COMPLETED|FAILED"
                _, page = await call(s, "GET", q + (f"&cursor={cursor}" if cursor else ""), ta)
                for t in page["items"]:  # type: ignore[index]
                    if t["transactionStatus"] == "FAILED":
                        raise SystemExit(f"a transaction failed: {t}")
                    done.setdefault(t["id"], time.time())
                cursor = page["nextCursor"]  # type: ignore[index]
                if not cursor:
                    break
            if time.time() - started > 900:
                raise SystemExit("the loop did not finish in 15 minutes")
        await poster
        elapsed = max(done.values()) - started
        return n / elapsed, [done[i] - posted[i] for i in done]


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
    p.add_argument("--backends", default="sqlite,postgres")
    p.add_argument("--transactions", type=int, default=1000)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--big-mib", type=int, default=50)
    p.add_argument("--pg-url", default=PG_URL)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as t:
        for backend in args.backends.split(","):
            port = free_port()
            extra = {"FOURCORNER_PUBLIC_URL": f"http://127.0.0.1:{port}"}
            schema = None
            if backend == "postgres":
                schema = f"fc_bench_{uuid.uuid4().hex[:8]}"
                with psycopg.connect(args.pg_url, autocommit=True) as c:
                    c.execute(f'CREATE SCHEMA "{schema}"')
                extra |= {
                    "FOURCORNER_DATABASE_URL": args.pg_url,
                    "FOURCORNER_DATABASE_SCHEMA": schema,
                }
            env = env_for(Path(t) / backend, port, **extra)
            proc = serve(env, port)
            try:
                rate, lat = asyncio.run(
                    loop(f"http://127.0.0.1:{port}", env, args.transactions, args.concurrency)
                )
            finally:
                proc.terminate()
                proc.wait(timeout=30)
            lat.sort()
            print(
                f"{backend:9} {rate:7.1f} tx/s (target >= 20: {'ok' if rate >= 20 else 'BELOW'})"
                f"  POST->COMPLETED p50 {statistics.median(lat) * 1000:.0f} ms, p99 {lat[int(len(lat) * 0.99) - 1] * 1000:.0f} ms"
            )
            # intake memory, without workers, so only the intake is measured
            env["FOURCORNER_WORKERS"] = "false"
            proc = serve(env, port)
            try:
                size, grew = asyncio.run(
                    intake_memory(f"http://127.0.0.1:{port}", env, proc.pid, args.big_mib)
                )
            finally:
                proc.terminate()
                proc.wait(timeout=30)
                if schema:
                    with psycopg.connect(args.pg_url, autocommit=True) as c:
                        c.execute(f'DROP SCHEMA "{schema}" CASCADE')
            print(
                f"{backend:9} intake of a {size / 2**20:.0f} MiB SBD: peak RSS grew {grew / 2**20:.1f} MiB"
                f" = {grew / size:.2f}x the file (target <= 3x)"
            )


if __name__ == "__main__":
    main()
