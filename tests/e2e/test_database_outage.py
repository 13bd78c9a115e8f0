"""Fault injection: the database goes away while the server is under load (a TCP proxy in
front of PostgreSQL is cut). Requests answer 503 with a code — not 500, not a hang — and the
server recovers by itself once the database is back."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

import pg
from fourcorner.adapters.postgres.storage import PING_WAIT
from tcp_proxy import Proxy

from .test_serve import free_port

pytestmark = [pytest.mark.slow, pytest.mark.postgres]
BIN = Path(sys.executable).parent / "fourcorner"


async def get(s: aiohttp.ClientSession, url: str, token: str) -> tuple[int, Any, float]:
    started = time.monotonic()
    async with s.get(url, headers={"Authorization": f"Bearer {token}"}) as r:
        return r.status, await r.json(), time.monotonic() - started


async def test_requests_answer_503_while_the_database_is_away_and_recover(tmp_path: Path) -> None:
    pg.require()
    proxy = Proxy.before(pg.URL)
    await proxy.restore()
    with pg.fresh_schema("fc_outage") as schema:
        port = free_port()
        url = proxy.url(pg.URL)
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("FOURCORNER_")},
            "FOURCORNER_DATA_DIR": str(tmp_path),
            "FOURCORNER_PORT": str(port),
            "FOURCORNER_DATABASE_URL": url,
            "FOURCORNER_DATABASE_SCHEMA": schema,
            "FOURCORNER_LOG_LEVEL": "warning",
        }
        # the proxy runs on this event loop: nothing here may block it
        proc = await asyncio.create_subprocess_exec(
            str(BIN), "serve", env=env, stderr=asyncio.subprocess.DEVNULL
        )
        base = f"http://127.0.0.1:{port}"
        try:
            async with aiohttp.ClientSession() as s:
                for _ in range(300):
                    try:
                        async with s.get(base + "/readyz") as r:
                            if r.status == 200:
                                break
                    except aiohttp.ClientError:
                        await asyncio.sleep(0.1)
                minted = await asyncio.create_subprocess_exec(
                    str(BIN),
                    "token",
                    "--email",
                    "o@example.com",
                    env=env,
                    stdout=asyncio.subprocess.PIPE,
                )
                token = (await minted.communicate())[0].decode().strip()
                async with s.post(
                    base + "/orgs",
                    headers={"Authorization": f"Bearer {token}"},
                    json={
                        "legalIdentifier": "2120000787",
                        "legalName": "Outage AB",
                        "countryCode": "SE",
                        "legalIdentifierCode": "SE:ORGNR",
                    },
                ) as r:
                    org = await r.json()
                path = f"{base}/orgs/{org['id']}"
                assert (await get(s, path, token))[0] == 200
                await proxy.cut()
                answers = await asyncio.gather(*(get(s, path, token) for _ in range(40)))
                assert {status for status, _, _ in answers} == {503}
                assert {body["code"] for _, body, _ in answers} == {"AT-1500"}
                assert max(seconds for _, _, seconds in answers) < 15  # refused, not hung
                # promptly, for a probe with a short timeout of its own, each time asked
                for _ in range(3):
                    status, body, seconds = await get(s, base + "/readyz", token)
                    assert (status, body["code"]) == (503, "AT-1500")
                    assert seconds < PING_WAIT + 1
                await proxy.restore()
                deadline = time.monotonic() + 30
                while (await get(s, path, token))[0] != 200:
                    assert time.monotonic() < deadline, "the server did not recover"
                    await asyncio.sleep(0.2)
                answers = await asyncio.gather(*(get(s, path, token) for _ in range(20)))
                assert {status for status, _, _ in answers} == {200}
        finally:
            proc.terminate()
            await asyncio.wait_for(proc.wait(), 20)
            await proxy.cut()
