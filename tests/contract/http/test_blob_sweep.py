"""The blob sweep after a simulated crash, on every storage backend with its default blob
store (memory, files, the database): blobs written with no record (the process died before
the commit) are removed once older than the grace period; blobs a record names, young ones
(an intake in flight) and a transaction's working blobs while it is still to be sent are
kept, and so are uploads in the incoming area until they are as old."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import pytest

import pg
from fourcorner.adapters.blobs import FileBlobStore, InMemoryBlobStore
from fourcorner.adapters.postgres.blobs import PostgresBlobStore
from fourcorner.application.collections import TRANSACTIONS
from fourcorner.application.sweep import Sweep, sweep
from fourcorner.application.transactions import blob_key, message_key
from fourcorner.domain.transaction import ArtefactType, Kind, Status
from fourcorner.entrypoints.container import build_container, resolve, web_app
from sbd_factory import make_sbd

from .conftest import BACKENDS, Api, settings_for
from .test_participants import ALICE, gln
from .test_transactions import receiving_participant

HOUR = timedelta(hours=1)


class Clock:
    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture(params=BACKENDS)
async def served(
    request: Any, tmp_path: Path, aiohttp_client: Any, shared_pki: Path
) -> AsyncIterator[tuple[Api, Any, Clock]]:
    """A server whose blob store (the backend's default: memory, files, the database)
    stamps blobs with a clock the test sets."""
    shutil.copytree(shared_pki, tmp_path / "pki")
    clock = Clock()

    async def start(schema: str = "") -> tuple[Api, Any, Clock]:
        blobs: Any = (
            InMemoryBlobStore(clock=clock)
            if request.param == "memory"
            else FileBlobStore(tmp_path / "blobs", clock=clock)
            if request.param == "sqlite"
            else PostgresBlobStore(
                pg.URL, schema=schema, spool=tmp_path / "blobs" / "incoming", clock=clock
            )
        )
        container = build_container(settings_for(request.param, tmp_path, schema), blobs=blobs)
        client = await aiohttp_client(await web_app(container))
        if isinstance(blobs, PostgresBlobStore):
            await blobs.open()  # after the storage's migrations made its tables
        return Api(client, container), blobs, clock

    if request.param == "postgres":
        with pg.fresh_schema("fc_http") as schema:
            started = await start(schema)
            yield started
            await started[0].client.close()  # its pools end before the schema goes
            await started[1].close()
    else:
        yield await start()


async def upload(api: Api, org: dict[str, Any], ap: str, sender: str) -> uuid.UUID:
    body = await api.send(ALICE, org["id"], ap, make_sbd(sender=sender))
    return uuid.UUID(body["transactionId"])


async def present(blobs: Any, key: str) -> bool:
    try:
        await blobs.get(key)
    except (FileNotFoundError, KeyError):
        return False
    return True


async def test_a_crash_leaves_files_the_sweep_removes_once_old(served: Any) -> None:
    api, blobs, clock = served
    ctx = await resolve(api.container.context)
    real_now = clock.now
    a = await api.org(ALICE)
    sender = f"0088:{gln(64)}"
    await receiving_participant(api, a, sender, ALICE)
    _, aps = await api.call("GET", f"/orgs/{a['id']}/aps/alltouse", as_=ALICE)
    ap = aps["items"][0]["id"]

    # two hours ago: two documents taken in (recorded), and what a crash left behind
    clock.now = real_now - 2 * HOUR
    waiting, failed = await upload(api, a, ap, sender), await upload(api, a, ap, sender)
    async with ctx.uow() as uow:
        tx = await uow.repository(TRANSACTIONS).get(failed)
        await uow.repository(TRANSACTIONS).update(
            attrs.evolve(tx, transaction_status=Status.FAILED)
        )
        await uow.commit()
    referenced = [blob_key(t, ArtefactType.BUSINESS_DOCUMENT) for t in (waiting, failed)]
    kept_while_sending = message_key(waiting)  # the message of a send still to finish
    orphans = [
        blob_key(uuid.uuid4(), ArtefactType.BUSINESS_DOCUMENT),  # intake died before commit
        blob_key(waiting, ArtefactType.TRANSACTION_RECEIPT),  # receipt never recorded
        f"{failed.hex}-mls-0badc0de",  # a status never recorded
        message_key(failed),  # the kept message of a finished send
    ]
    foreign = "not-a-key-of-this-service"
    for key in [kept_while_sending, *orphans, foreign]:
        await blobs.put(key, b"<crash/>")
    stale_upload = blobs.incoming()
    stale_upload.write_bytes(b"half an upload")
    os.utime(stale_upload, ((real_now - 2 * HOUR).timestamp(),) * 2)

    # ten minutes ago: an intake in flight (stored, not yet committed) and a fresh upload
    clock.now = real_now - timedelta(minutes=10)
    in_flight = blob_key(uuid.uuid4(), ArtefactType.BUSINESS_DOCUMENT)
    await blobs.put(in_flight, b"<in flight/>")
    streaming = blobs.incoming()
    streaming.write_bytes(b"still arriving")
    clock.now = real_now

    assert await sweep(ctx, blobs, HOUR) == Sweep(blobs=len(orphans), incoming=1)
    for key in orphans:
        assert not await present(blobs, key), key
    for key in [*referenced, kept_while_sending, foreign, in_flight]:
        assert await present(blobs, key), key
    assert not stale_upload.exists() and streaming.exists()
    status, document = await api.call(
        "GET", f"/orgs/{a['id']}/transactions/{waiting}/business_document", as_=ALICE
    )
    assert status == 200 and b"StandardBusinessDocument" in document
    assert await sweep(ctx, blobs, HOUR) == Sweep()  # nothing more to remove

    # later, the in-flight blob never recorded and the upload never finished are orphans too
    later = attrs.evolve(ctx, clock=lambda: real_now + 2 * HOUR)
    assert await sweep(later, blobs, HOUR) == Sweep(blobs=1, incoming=1)
    assert not await present(blobs, in_flight)
    for key in [*referenced, kept_while_sending]:
        assert await present(blobs, key), key
    async with ctx.uow() as uow:
        assert await uow.repository(TRANSACTIONS).count(kind=Kind.DOCUMENT) == 2
