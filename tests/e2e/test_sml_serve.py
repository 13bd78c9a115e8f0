"""End to end: ``fourcorner serve`` configured by its environment with the local SML registers
its SMP at start and a new participant, which a discovery by DNS then finds; deleting it
takes it out of the DNS again."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from fourcorner.adapters.pki import ensure_test_pki
from fourcorner.adapters.pki.testpki import cert_pem, load_test_pki
from fourcorner.adapters.smp.discovery import SmlDiscovery
from fourcorner.adapters.smp.errors import SmpLookupError
from fourcorner.domain.network_services import Environment
from sml_service import TestSml

pytestmark = pytest.mark.slow
TEST = Environment.TEST
BIN = Path(sys.executable).parent / "fourcorner"
IDENT = "0088:7300010000001"  # a GLN with its check digit


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tail(log: Path) -> str:
    return log.read_text(errors="replace")[-3000:]


async def eventually(
    check: Callable[[], Awaitable[bool]], what: str, log: Path, within: float = 60
) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if await check():
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"not within {within} s: {what}; the server said: {tail(log)}")


async def test_serve_registers_its_smp_and_participants_in_the_sml(
    sml_service: TestSml, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    ensure_test_pki(data)  # made before the start, so that the SML can be told to trust it
    for anchor in load_test_pki(data / "pki").trust_anchors:
        sml_service.trust(cert_pem(anchor))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "FOURCORNER_DATA_DIR": str(data),
        "FOURCORNER_PORT": str(port),
        "FOURCORNER_HOST": "127.0.0.1",
        "FOURCORNER_SML_URL_TEST": sml_service.url,
        "FOURCORNER_SMP_ID_TEST": "FOURCORNER-E2E",
        "FOURCORNER_SML_CA_FILE": str(sml_service.ca_file),
    }
    env.pop("FOURCORNER_DATABASE_URL", None)
    log = tmp_path / "server.log"
    with log.open("ab") as err:
        proc = await asyncio.create_subprocess_exec(
            str(BIN), "serve", env=env, stdout=asyncio.subprocess.DEVNULL, stderr=err
        )
    try:
        async with aiohttp.ClientSession(base) as http:

            async def ready() -> bool:
                assert proc.returncode is None, tail(log)
                try:
                    async with http.get("/readyz") as r:
                        return r.status == 200
                except aiohttp.ClientError:
                    return False

            await eventually(ready, "the server is ready", log)

            async def smp_registered() -> bool:
                return "FOURCORNER-E2E" in sml_service.smps

            await eventually(smp_registered, "the SMP registers itself in the SML", log)
            assert sml_service.smps["FOURCORNER-E2E"].logical == f"{base}/smp/test"

            token_run = await asyncio.create_subprocess_exec(
                str(BIN),
                "token",
                "--email",
                "a@example.com",
                env=env,
                stdout=asyncio.subprocess.PIPE,
            )
            token = (await token_run.communicate())[0].decode().strip()
            auth = {"Authorization": f"Bearer {token}"}

            async def call(method: str, path: str, body: Any = None) -> tuple[int, Any]:
                async with http.request(method, path, json=body, headers=auth) as r:
                    return r.status, await r.json()

            status, org = await call(
                "POST",
                "/orgs",
                {
                    "legalIdentifier": "2120000787",
                    "legalName": "ACME AB",
                    "countryCode": "SE",
                    "legalIdentifierCode": "SE:ORGNR",
                },
            )
            assert status == 201, org
            _, smps = await call("GET", f"/orgs/{org['id']}/smps/alltouse")
            _, aps = await call("GET", f"/orgs/{org['id']}/aps/alltouse")
            body = {
                "name": "Receiver",
                "participantIdentifier": IDENT,
                "smpRef": smps["items"][0]["id"],
                "apRef": aps["items"][0]["id"],
            }
            status, p = await call("POST", f"/orgs/{org['id']}/participants", body)
            assert status == 201, p

            async def active() -> bool:
                _, got = await call("GET", f"/orgs/{org['id']}/participants/{p['id']}")
                return bool(got["status"] == "ACTIVE")

            await eventually(active, "the participant is ACTIVE", log)
            dns = SmlDiscovery(
                {Environment.TEST: sml_service.dns.zone}, [("127.0.0.1", sml_service.dns.port)]
            )
            found: list[str] = []

            async def discoverable() -> bool:
                # the SML restarts its DNS after each registration (the operator's own
                # participant's may come after this one's): a timeout then is a restart
                try:
                    found.append(await dns.smp_url(("iso6523-actorid-upis", IDENT), TEST))
                except SmpLookupError as e:
                    if e.permanent:
                        raise
                    return False
                return True

            await eventually(discoverable, "the participant is found in the SML's DNS", log)
            assert found == [f"{base}/smp/test"]

            status, _ = await call(
                "POST", f"/orgs/{org['id']}/participants/batch-delete", {"ids": [p["id"]]}
            )
            assert status == 200

            async def gone() -> bool:
                fresh = SmlDiscovery(
                    {Environment.TEST: sml_service.dns.zone},
                    [("127.0.0.1", sml_service.dns.port)],
                )
                try:
                    await fresh.smp_url(("iso6523-actorid-upis", IDENT), Environment.TEST)
                except SmpLookupError:
                    return True
                return False

            await eventually(gone, "the participant leaves the SML's DNS", log)
        assert sml_service.invalid == []
    finally:
        proc.terminate()
        await proc.wait()
