"""Batch requests over the same records at once, named in another order (``asyncio.gather``,
many rounds, on PostgreSQL where their units of work overlap): the outcome must be one the
requests made one after the other would give (a deletion: one deletes all, the other finds
none, 404), never a deadlock that PostgreSQL breaks by failing one of them ("the database
cannot be reached", 503). Every batch takes its records in one order whatever order the
client names them in: its organisation's lock first (certificates, access points), the
records themselves in id order (webhooks, participants, users).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from .test_participants import ALICE, ROOT, ap_certificate, gln, participant, whitelabel

ROUNDS = 12
ON_POSTGRES = pytest.mark.parametrize(
    "api", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)


async def _webhook(api: Any, org_id: str, n: int) -> str:
    body = {"url": f"https://hooks.example.com/{n}", "events": ["webhook.test"]}
    status, made = await api.call("POST", f"/orgs/{org_id}/webhooks", as_=ALICE, json=body)
    assert status == 201, made
    return str(made["id"])


async def _participant(api: Any, org_id: str, n: int) -> str:
    status, made = await participant(api, org_id, f"0088:{gln(800 + n)}")
    assert status == 201, made
    return str(made["id"])


async def _certificate(api: Any, org_id: str, n: int) -> str:
    body, _, _ = ap_certificate(api, f"cert {n}", f"POP{800 + n:06d}", 30)
    status, made = await api.call("POST", f"/orgs/{org_id}/certificates", as_=ALICE, json=body)
    assert status == 201, made
    return str(made["id"])


async def _access_point(api: Any, org_id: str, n: int) -> str:
    cert = await _certificate(api, org_id, n)
    body = {"name": f"ap {n}", "certificateRef": cert, "environment": "TEST"}
    status, made = await api.call("POST", f"/orgs/{org_id}/aps", as_=ALICE, json=body)
    assert status == 201, made
    return str(made["id"])


async def _user(api: Any, org_id: str, n: int) -> str:
    return str((await api.me(f"user{n}@example.com"))["id"])


async def _opposite_orders(
    api: Any,
    path: str,
    make: Callable[[int], Awaitable[str]],
    expected: list[int],
    superadmin: bool = False,
) -> None:
    """Each round: two records made, then ``path`` asked for both, in both orders at once;
    the two answers' statuses, sorted, must be ``expected``."""
    who = ROOT if superadmin else ALICE
    answered = []
    for n in range(ROUNDS):
        ids = [await make(2 * n), await make(2 * n + 1)]
        answers = await asyncio.gather(
            api.call("POST", path, as_=who, superadmin=superadmin, json={"ids": ids}),
            api.call("POST", path, as_=who, superadmin=superadmin, json={"ids": ids[::-1]}),
        )
        answered.append(sorted(status for status, _ in answers))
    assert all(statuses == expected for statuses in answered), answered


# the batches, what each round makes for them, and the two answers' statuses
BATCHES = {
    "webhooks/batch-delete": (_webhook, [200, 404]),
    "participants/batch-delete": (_participant, [200, 404]),
    "participants/request-pd-publish": (_participant, [200, 200]),
    "certificates/batch_delete": (_certificate, [200, 404]),
    "aps/batch-delete": (_access_point, [200, 404]),
}


@ON_POSTGRES
@pytest.mark.parametrize("batch", list(BATCHES))
async def test_batches_of_the_same_records_in_opposite_orders_at_once(api: Any, batch: str) -> None:
    make, expected = BATCHES[batch]
    own_services = batch.split("/")[0] in ("certificates", "aps")  # a whitelabel's only
    org_id = (await whitelabel(api) if own_services else await api.org(ALICE))["id"]
    await _opposite_orders(api, f"/orgs/{org_id}/{batch}", lambda n: make(api, org_id, n), expected)


@ON_POSTGRES
async def test_batch_deletes_of_the_same_users_in_opposite_orders_at_once(api: Any) -> None:
    await _opposite_orders(
        api, "/users/batch-delete", lambda n: _user(api, "", n), [200, 404], superadmin=True
    )
