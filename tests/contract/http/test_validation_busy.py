"""``POST /validation`` beside intake: the checks asked by hand run one at a time per process
(one more is refused at once, 503 ``AT-1505`` with ``Retry-After``, in the error shape), at
the validator's low priority, while documents sent go on being checked meanwhile."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from fourcorner.domain.validation import ValidationResult
from sbd_factory import make_sbd
from validation_cases import EXAMPLES

from .test_participants import ALICE, gln
from .test_transactions import receiving_participant

BASE = (EXAMPLES / "base-example.xml").read_bytes()
XML = {"Content-Type": "application/xml"}
GUARD = 60  # seconds a test waits for what must happen, before failing


class Holding:
    """The run's validator, with the checks of low priority held until ``go`` is set; every
    check's priority is kept in ``asked``."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.asked: list[bool] = []
        self.entered = asyncio.Event()
        self.go = asyncio.Event()

    async def validate(
        self, document: Path | bytes, *, low_priority: bool = False
    ) -> ValidationResult:
        self.asked.append(low_priority)
        if low_priority:
            self.entered.set()
            await self.go.wait()
        result: ValidationResult = await self.real.validate(document, low_priority=low_priority)
        return result

    async def aclose(self) -> None:
        return None


@pytest.fixture
def validator(validator: Any) -> Holding:
    """The ``api`` fixture's validator: the run's one, held as ``Holding`` says."""
    return Holding(validator)


async def check(api: Any, body: bytes = BASE) -> tuple[int, Any, Any]:
    token = api.token("val@example.com")
    headers = {"Authorization": f"Bearer {token}", **XML}
    resp = await api.client.post("/validation", data=body, headers=headers)
    return resp.status, resp.headers, await resp.json()


async def test_one_check_at_a_time_and_documents_sent_meanwhile(api: Any, validator: Any) -> None:
    org = await api.org(ALICE)
    sender = f"0088:{gln(71)}"
    await receiving_participant(api, org, sender, ALICE)
    _, aps = await api.call("GET", f"/orgs/{org['id']}/aps/alltouse", as_=ALICE)

    first = asyncio.create_task(check(api))
    async with asyncio.timeout(GUARD):
        await validator.entered.wait()
    # a second check, and one more document each time (the cache of answers is no way round)
    for n in range(3):
        status, headers, body = await check(api, BASE + b"<!-- %d -->" % n)
        assert status == 503, body
        assert body["code"] == "AT-1505" and set(body) == {"code", "error"}, body
        assert "/validation" in body["error"] and headers["Retry-After"] == "5"
    # a document sent meanwhile is checked at once, at the usual priority
    sent = await api.send(ALICE, org["id"], aps["items"][0]["id"], make_sbd(sender=sender))
    assert sent["transactionId"]
    assert validator.asked == [True, False]

    validator.go.set()
    async with asyncio.timeout(GUARD):
        status, _, body = await first
    assert status == 200 and body["valid"] is True, body
    status, _, body = await check(api, BASE + b"<!-- again -->")
    assert status == 200 and body["valid"] is True, body
    assert validator.asked == [True, False, True]
