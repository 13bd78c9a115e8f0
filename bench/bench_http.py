"""HTTP throughput of the API against a bare aiohttp handler returning the same bytes.

Targets (issue 17): authenticated reads (``GET /orgs/:orgId``, ``GET /users/me``) at least 0.5
of the bare handler's requests/s, on SQLite and on PostgreSQL; the catalogue reads 0.5. The
server runs on core 0, wrk on core 1. Beside requests/s, each server's CPU time per request
(from /proc, over the same runs) and their ratio: on a machine that other work shares, a
server loses whole time slices, which moves its requests/s far more than its CPU time per
request.
"""

from __future__ import annotations

import argparse
import json
import pstats
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import psycopg
from common import (
    BIN,
    cpu_seconds,
    env_for,
    free_port,
    http,
    need_wrk,
    pinned,
    stop,
    wait_ready,
    wrk,
)

PG_URL = "postgresql://postgres@127.0.0.1:5432/test"


def start(env: dict[str, str], port: int, profile: Path | None = None) -> subprocess.Popen[bytes]:
    argv = [str(BIN / "fourcorner"), "serve"]
    if profile is not None:
        argv = [sys.executable, "-m", "cProfile", "-o", str(profile), *argv]
    proc = subprocess.Popen(pinned(0, argv), env=env)
    wait_ready(f"http://127.0.0.1:{port}/readyz", proc)
    return proc


def token(env: dict[str, str], email: str) -> str:
    out = subprocess.run(
        [str(BIN / "fourcorner"), "token", "--email", email],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def setup(base: str, auth: dict[str, str]) -> str:
    body = {
        "legalIdentifier": "2120000787",
        "legalName": "Bench AB",
        "countryCode": "SE",
        "legalIdentifierCode": "SE:ORGNR",
    }
    status, raw = http("POST", base + "/orgs", auth, body)
    assert status == 201, raw
    return str(json.loads(raw)["id"])


def api_key(base: str, auth: dict[str, str], org_id: str) -> str:
    body = {"name": "bench", "expires": "2099-01-01T00:00:00Z", "role": "orgadmin"}
    status, raw = http("POST", f"{base}/orgs/{org_id}/api_keys", auth, body)
    assert status == 201, raw
    return str(json.loads(raw)["key"])


def measure(
    backend: str, args: argparse.Namespace, tmp: Path
) -> list[tuple[str, dict[str, float], dict[str, float], float]]:
    port = free_port()
    extra: dict[str, str] = {}
    schema = None
    if backend == "postgres":
        schema = f"fc_bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(args.pg_url, autocommit=True) as c:
            c.execute(f'CREATE SCHEMA "{schema}"')
        extra = {"FOURCORNER_DATABASE_URL": args.pg_url, "FOURCORNER_DATABASE_SCHEMA": schema}
    data = tmp / backend
    env = env_for(data, port, **extra)
    profile = tmp / f"{backend}.prof" if args.profile else None
    proc = start(env, port, profile)
    results = []
    try:
        base = f"http://127.0.0.1:{port}"
        auth = {"Authorization": f"Bearer {token(env, 'bench@example.com')}"}
        org_id = setup(base, auth)
        key = {"X-Api-Key": api_key(base, auth, org_id)}
        for path, target, credentials in (
            (f"/orgs/{org_id}", 0.5, auth),
            (f"/orgs/{org_id}", 0.5, key),
            ("/users/me", 0.5, auth),
            ("/document_types?filter=category:eq:Invoice", 0.5, auth),
            ("/participant_identifiers?filter=country:eq:SE", 0.5, auth),
        ):
            if not any(part in path for part in args.routes.split(",")):
                continue
            _, body = http("GET", base + path, credentials)
            ours, bare = alternate(base + path, credentials, body, tmp, args, proc.pid)
            shown = path.replace(org_id, ":orgId") + (" (API key)" if credentials is key else "")
            results.append((shown, ours, bare, target))
    finally:
        stop(proc)
        if schema:
            with psycopg.connect(args.pg_url, autocommit=True) as c:
                c.execute(f'DROP SCHEMA "{schema}" CASCADE')
    if profile is not None:
        print(f"\nprofile of the {backend} server (top 25 by internal time):")
        pstats.Stats(str(profile)).sort_stats("tottime").print_stats(25)
    return results


def _run(pid: int, url: str, headers: dict[str, str], args: argparse.Namespace) -> dict[str, float]:
    """One wrk run, with the server's CPU microseconds per request over it."""
    before = cpu_seconds(pid)
    result = wrk(url, headers, duration=args.duration, connections=args.connections)
    used = cpu_seconds(pid) - before
    return result | {"cpu_us": used / (result["rps"] * args.duration) * 1e6}


def alternate(
    url: str,
    auth: dict[str, str],
    body: bytes,
    tmp: Path,
    args: argparse.Namespace,
    server_pid: int,
) -> tuple[dict[str, float], dict[str, float]]:
    """``args.rounds`` runs of our server and of a bare handler serving ``body``, taken in
    turn (both on core 0, one loaded at a time), so that a slower moment of the machine hits
    both; the median run of each is reported."""
    f = tmp / "bare-body.json"
    f.write_bytes(body)
    port = free_port()
    here = Path(__file__).parent
    proc = subprocess.Popen(
        pinned(
            0,
            [sys.executable, str(here / "bare_server.py"), str(port), str(f), args.bare_loop],
        )
    )
    ours: list[dict[str, float]] = []
    bare: list[dict[str, float]] = []
    try:
        wait_ready(f"http://127.0.0.1:{port}/", proc)
        for _ in range(args.rounds):
            ours.append(_run(server_pid, url, auth, args))
            bare.append(_run(proc.pid, f"http://127.0.0.1:{port}/x", {}, args))
    finally:
        stop(proc)
    print(
        f"{url}: req/s ours {[round(r['rps']) for r in ours]},"
        f" bare {[round(r['rps']) for r in bare]}",
        flush=True,
    )
    return _median(ours), _median(bare)


def _median(runs: list[dict[str, float]]) -> dict[str, float]:
    """The median run by requests/s, with the median CPU time per request of all runs."""
    middle = sorted(runs, key=lambda r: r["rps"])[len(runs) // 2]
    cpu = sorted(r["cpu_us"] for r in runs)[len(runs) // 2]
    return middle | {"cpu_us": cpu}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--backends", default="sqlite,postgres")
    p.add_argument("--duration", type=int, default=5, help="seconds per run")
    p.add_argument("--rounds", type=int, default=3, help="runs of each server, alternating")
    p.add_argument("--connections", type=int, default=64)
    p.add_argument(
        "--bare-loop",
        choices=("uvloop", "asyncio"),
        default="uvloop",
        help="the bare handler's event loop: uvloop (as fourcorner serve's) or asyncio's "
        "(aiohttp's default)",
    )
    p.add_argument("--pg-url", default=PG_URL)
    p.add_argument(
        "--routes",
        default="/orgs/,/users/me,/document_types,/participant_identifiers",
        help="measure the routes whose path holds one of these, comma-separated",
    )
    p.add_argument("--profile", action="store_true", help="run the server under cProfile")
    args = p.parse_args()
    need_wrk()
    rows = []
    with tempfile.TemporaryDirectory() as t:
        for backend in args.backends.split(","):
            for path, ours, bare, target in measure(backend, args, Path(t)):
                rows.append((backend, path, ours, bare, target))
    print(
        f"\n{'backend':9} {'route':46} {'req/s':>7} {'p50 ms':>7} {'p99 ms':>7}"
        f" {'bare':>7} {'ratio':>6} {'µs CPU':>7} {'bare µs':>7} {'ratio':>6}  target"
    )
    for backend, path, ours, bare, target in rows:
        ratio = ours["rps"] / bare["rps"]
        by_cpu = bare["cpu_us"] / ours["cpu_us"]
        print(
            f"{backend:9} {path:46} {ours['rps']:7.0f} {ours['p50']:7.2f} {ours['p99']:7.2f}"
            f" {bare['rps']:7.0f} {ratio:6.2f} {ours['cpu_us']:7.1f} {bare['cpu_us']:7.1f}"
            f" {by_cpu:6.2f}  {target:.1f} {'ok' if ratio >= target else 'BELOW'}"
        )


if __name__ == "__main__":
    main()
