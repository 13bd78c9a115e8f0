"""Batch requests over the same records at once, named in another order (``asyncio.gather``,
many rounds, on PostgreSQL where their units of work overlap): the outcome must be one the
requests made one after the other would give (a deletion: one deletes all, the other finds
none, 404), never a deadlock that PostgreSQL breaks by failing one of them.

These document a defect (``xfail(strict=True)``): ``webhooks.delete_many``,
``participants.delete_many`` and ``participants.request_publication`` take each record's row
(a ``DELETE``, or ``lock``) in the order the client named them, holding no lock that orders
them first (the organisation's, as the batch deletes of certificates and access points do,
or ``lock_many``'s id order): two batches of the same records in opposite orders deadlock,
and one answers 503 ("the database cannot be reached").
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from .test_participants import ALICE, gln, participant

ROUNDS = 12
OPPOSITE_ORDERS = pytest.mark.xfail(
    strict=True,
    reason="the batch takes the rows in the order the client names them: two batches in "
    "opposite orders deadlock and one answers 503",
)
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


async def _opposite_orders(
    api: Any, path: str, make: Callable[[int], Awaitable[str]], expected: list[int]
) -> None:
    """Each round: two records made, then ``path`` asked for both, in both orders at once;
    the two answers' statuses, sorted, must be ``expected``."""
    answered = []
    for n in range(ROUNDS):
        ids = [await make(2 * n), await make(2 * n + 1)]
        answers = await asyncio.gather(
            api.call("POST", path, as_=ALICE, json={"ids": ids}),
            api.call("POST", path, as_=ALICE, json={"ids": ids[::-1]}),
        )
        answered.append(sorted(status for status, _ in answers))
    assert all(statuses == expected for statuses in answered), answered


MAKERS = {"webhooks": _webhook, "participants": _participant}


@ON_POSTGRES
@pytest.mark.parametrize(
    ("batch", "expected"),
    [
        ("webhooks/batch-delete", [200, 404]),
        ("participants/batch-delete", [200, 404]),
        ("participants/request-pd-publish", [200, 200]),
    ],
)
@OPPOSITE_ORDERS
async def test_batches_of_the_same_records_in_opposite_orders_at_once(
    api: Any, batch: str, expected: list[int]
) -> None:
    org_id = (await api.org(ALICE))["id"]
    make = MAKERS[batch.split("/")[0]]
    await _opposite_orders(api, f"/orgs/{org_id}/{batch}", lambda n: make(api, org_id, n), expected)
