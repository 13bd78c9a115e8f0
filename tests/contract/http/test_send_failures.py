"""Why sending failed, told apart: the receiver is not registered (TXE-1001), is registered but
does not accept the document type (TXE-1006) — both for good, at the first attempt — or the
receiver's SMP cannot be reached (TXE-1003), retried before failing."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from fourcorner.application.collections import TRANSACTIONS
from fourcorner.entrypoints.container import resolve
from sbd_factory import make_sbd

from .conftest import BACKENDS, free_port
from .test_participants import ALICE, BOB, gln, participant
from .test_transactions import _sender_setup, until


async def _send(api: Any, org: dict[str, Any], ap: str, sender: str, receiver: str) -> str:
    status, body = await api.call(
        "POST",
        f"/orgs/{org['id']}/transactions?ap={ap}",
        as_=ALICE,
        data=make_sbd(sender=sender, receiver=receiver),
        headers={"Content-Type": "application/xml"},
    )
    assert status == 202, body
    return str(body["transactionId"])


async def _failed(api: Any, org: dict[str, Any], tx_id: str) -> tuple[dict[str, Any], int]:
    async def failed() -> Any:
        _, tx = await api.call("GET", f"/orgs/{org['id']}/transactions/{tx_id}", as_=ALICE)
        return tx if tx["transactionStatus"] == "FAILED" else None

    tx = await until(failed)
    ctx = await resolve(api.container.context)
    async with ctx.uow() as uow:
        stored = await uow.repository(TRANSACTIONS).get(uuid.UUID(tx_id))
    return tx, stored.attempts


@pytest.mark.parametrize("backend", BACKENDS)
async def test_not_registered_and_not_accepting_are_told_apart(start_api, backend):
    api = await start_api(backend, workers=True, public=True, send_retry_delays="0.1")
    a, sender, ap = await _sender_setup(api)
    b = await api.org(BOB, legal_id="5560360793")
    # registered in the SMP, but accepting no document type at all
    registered = f"0088:{gln(87)}"
    status, made = await participant(api, b["id"], registered, who=BOB)
    assert status == 201, made

    unknown = await _send(api, a, ap, sender, f"0088:{gln(88)}")
    tx, attempts = await _failed(api, a, unknown)
    assert tx["serviceError"]["code"] == "TXE-1001", tx
    assert tx["serviceError"]["category"] == "ROUTING_ERROR"
    assert tx["serviceError"]["action"] == "FIX_AND_RETRY"
    assert "not registered in the network" in tx["serviceError"]["message"]
    assert attempts == 1

    refusing = await _send(api, a, ap, sender, registered)
    tx, attempts = await _failed(api, a, refusing)
    assert tx["serviceError"]["code"] == "TXE-1006", tx
    assert tx["serviceError"]["action"] == "FIX_AND_RETRY"
    assert "does not accept this document type" in tx["serviceError"]["message"]
    assert attempts == 1


@pytest.mark.parametrize("backend", BACKENDS)
async def test_an_unreachable_smp_is_retried_then_failed(start_api, backend):
    dead = f"http://127.0.0.1:{free_port()}/smp"
    api = await start_api(
        backend,
        workers=True,
        public=True,
        smp_lookup_url=dead,
        send_retry_delays="0.1",
        send_attempts=3,
    )
    a, sender, ap = await _sender_setup(api)
    tx_id = await _send(api, a, ap, sender, f"0088:{gln(89)}")
    tx, attempts = await _failed(api, a, tx_id)
    assert tx["serviceError"]["code"] == "TXE-1003", tx
    assert tx["serviceError"]["category"] == "TRANSPORT_ERROR"
    assert tx["serviceError"]["action"] == "RETRY"
    assert attempts == 3
