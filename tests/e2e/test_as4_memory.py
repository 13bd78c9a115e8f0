"""The AS4 endpoint's memory, measured on ``fourcorner serve`` as a subprocess (its peak RSS,
``VmHWM``, reset through ``/proc/<pid>/clear_refs`` before each measurement): bodies sent to
access points that do not exist are refused unread (the 404 read by the client while it still
sends), their connections closed after a bounded lingering read that keeps none of it, and cost
the server next to nothing; a valid 50 MiB document is taken in for less than 3 times its size,
with blobs kept as files (SQLite) and in the database (PostgreSQL); a sender hanging up midway
leaves no file behind. None of it logs an unhandled error."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import pytest
from lxml import etree

import pg
from fourcorner.adapters.pki.testpki import load_test_pki
from sbd_factory import BILLING_PROCESS, INVOICE, RECEIVER, SENDER, make_as4_message, make_sbd
from uploads import MiB, upload

from .test_serve import Server, free_port

pytestmark = pytest.mark.slow
EB = "http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/"


def status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


class Peak:
    """How much a process's peak resident memory grows over a stretch of work."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def __enter__(self) -> Peak:
        Path(f"/proc/{self.pid}/clear_refs").write_text("5")  # the peak restarts from now
        self.base = status_kib(self.pid, "VmRSS") * 1024
        return self

    def __exit__(self, *_: object) -> None:
        self.grew = status_kib(self.pid, "VmHWM") * 1024 - self.base


def test_bodies_to_unknown_access_points_are_refused_unread(tmp_path: Path) -> None:
    server = Server(tmp_path, free_port())
    server.env["FOURCORNER_WORKERS"] = "false"
    server.start()
    try:
        assert server.proc is not None
        port = port_of(server)
        size = 200 * MiB
        paths = [f"/as4/{uuid.uuid4()}/{uuid.uuid4()}" for _ in range(3)]

        multipart = 'multipart/related; type="application/soap+xml"; boundary="b"'

        async def three() -> list[tuple[int | None, int, bool]]:
            return await asyncio.gather(
                *(upload(port, p, size, content_type=multipart) for p in paths)
            )

        with Peak(server.proc.pid) as peak:
            results = asyncio.run(three())
        assert peak.grew <= 32 * MiB, f"peak RSS grew {peak.grew / MiB:.1f} MiB"
        for status, sent, _ in results:
            # the 404 is read though the body is left unread: the server shuts its side after
            # the answer and reads away at most 32 MiB (its lingering close) before closing
            assert status == 404
            assert sent < size // 2, "the server read the body instead of closing"
    finally:
        server.stop()
    assert "unhandled error" not in server.log.read_text()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database(request: Any) -> Iterator[dict[str, str]]:
    """The server's database settings: SQLite (blobs as files), or PostgreSQL in a schema of
    the test's own (blobs in the database, streamed in from the spooled upload)."""
    if request.param == "sqlite":
        yield {}
        return
    with pg.fresh_schema("fc_memory") as schema:
        yield {"FOURCORNER_DATABASE_URL": pg.URL, "FOURCORNER_DATABASE_SCHEMA": schema}


def test_a_50_mib_document_is_taken_in_for_less_than_three_times_its_size(
    tmp_path: Path, database: dict[str, str]
) -> None:
    server = Server(tmp_path, free_port())
    server.env["FOURCORNER_WORKERS"] = "false"
    server.env.update(database)
    server.start()
    try:
        assert server.proc is not None
        bob = server.token("bob@example.com")
        org_id, ap_path = receiving_organisation(server, bob)
        sbd = make_sbd(sender=SENDER, receiver=RECEIVER, pad_to=50 * MiB)
        msg = make_as4_message(
            load_test_pki(tmp_path / "pki"), sbd, sender=SENDER, receiver=RECEIVER
        )

        async def post() -> tuple[int, bytes]:
            async with (
                aiohttp.ClientSession() as s,
                s.post(server.base + ap_path, data=msg.body, headers=msg.http_headers) as r,
            ):
                return r.status, await r.read()

        with Peak(server.proc.pid) as peak:
            status, answer = asyncio.run(post())
        assert status == 200 and error_of(answer) is None and b"Receipt" in answer
        assert peak.grew <= 3 * len(sbd), f"peak RSS grew {peak.grew / MiB:.1f} MiB"
        status, page = server.call("GET", f"/orgs/{org_id}/transactions/from_network", bob)
        assert status == 200 and [t["receiverId"] for t in page["items"]] == [RECEIVER]
        asyncio.run(hang_up(port_of(server), ap_path))
        wait_for_line(server.log, '"status": 400')  # the access log's line: the request is over
        assert list((tmp_path / "blobs" / "incoming").iterdir()) == []
    finally:
        server.stop()
    assert "unhandled error" not in server.log.read_text()


async def hang_up(port: int, path: str) -> None:
    """A sender that announces 10 MB, sends half a megabyte and goes away."""
    _, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/related\r\n"
        "Content-Length: 10000000\r\n\r\n".encode()
        + b"\0" * 500_000
    )
    await writer.drain()
    writer.close()


def wait_for_line(log: Path, text: str, within: float = 20.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if any(text in line for line in log.read_text().splitlines() if "/as4/" in line):
            return
        time.sleep(0.05)
    raise AssertionError(f"no log line with {text!r}")


def port_of(server: Server) -> int:
    return int(server.base.rsplit(":", 1)[1])


def receiving_organisation(server: Server, token: str) -> tuple[str, str]:
    """An organisation whose participant ``RECEIVER`` receives invoices on the operator's
    access point: ``(org id, the access point's AS4 path)``."""
    status, org = server.call(
        "POST",
        "/orgs",
        token,
        {
            "legalIdentifier": "5560360793",
            "legalName": "Bob AB",
            "countryCode": "SE",
            "legalIdentifierCode": "SE:ORGNR",
        },
    )
    assert status == 201, org
    oid = org["id"]
    _, smps = server.call("GET", f"/orgs/{oid}/smps/alltouse", token)
    _, aps = server.call("GET", f"/orgs/{oid}/aps/alltouse", token)
    ap = aps["items"][0]
    status, p = server.call(
        "POST",
        f"/orgs/{oid}/participants",
        token,
        {
            "name": "receiver",
            "participantIdentifier": RECEIVER,
            "smpRef": smps["items"][0]["id"],
            "apRef": ap["id"],
        },
    )
    assert status == 201, p
    _, docs = server.call("GET", "/document_types?filter=state:eq:active", token)
    doc = next(d for d in docs["items"] if d["value"] == INVOICE.value)
    status, body = server.call(
        "PUT",
        f"/orgs/{oid}/participants/{p['id']}/supported_document_types",
        token,
        {
            "supportedDocumentTypes": [
                {"documentId": doc["id"], "processId": f"cenbii-procid-ubl::{BILLING_PROCESS}"}
            ]
        },
    )
    assert status == 200, body
    return oid, urlsplit(ap["apUrl"]).path


def error_of(answer: bytes) -> str | None:
    found = etree.fromstring(answer).find(f".//{{{EB}}}Error")
    return None if found is None else str(found.get("errorCode"))
