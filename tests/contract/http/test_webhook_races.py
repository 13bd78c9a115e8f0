"""Changes to one webhook racing each other over HTTP, many rounds per backend.

Each round sends its requests at once (``asyncio.gather``); on PostgreSQL they run in
overlapping transactions on different pooled connections. A change writes the whole record,
so each must start from what the other committed: however they interleave, both changes hold
afterwards, as if made one after the other."""

from __future__ import annotations

import asyncio
from typing import Any

from .test_webhooks import ALICE, hook

ROUNDS = 30


async def test_concurrent_changes_to_one_webhook_lose_neither(api: Any) -> None:
    org = await api.org(ALICE)
    made = await hook(api, org["id"], "https://hooks.example.com/in")
    path = f"/orgs/{org['id']}/webhooks/{made['id']}"
    for n in range(ROUNDS):
        status, body = await api.call("PUT", path, as_=ALICE, json={"isEnabled": True})
        assert status == 200, body
        answers = await asyncio.gather(
            api.call("PUT", path, as_=ALICE, json={"isEnabled": False}),
            api.call("PUT", path, as_=ALICE, json={"description": f"round {n}"}),
        )
        assert [status for status, _ in answers] == [200, 200], answers
        status, got = await api.call("GET", path, as_=ALICE)
        assert status == 200
        assert (got["isEnabled"], got["description"]) == (False, f"round {n}"), (n, got)
