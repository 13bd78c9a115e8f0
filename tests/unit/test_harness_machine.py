"""The harness's state machine against services whose answers carry state from one example to
the next, as a long-lived service's do (its authentication throttle, its limits, its records):
Hypothesis runs an example again (to explore around it, to shrink it) and must meet the same
draws, so the run ends with a verdict, never with ``FlakyStrategyDefinition``; a divergence is
still found and shrunk. Both sides here are small fakes that share what carries over."""

from __future__ import annotations

import re
import uuid
from typing import Any

import attrs

from fourcorner.entrypoints.harness.records import FailedAuthentications, Run
from fourcorner.entrypoints.harness.runner import run_machine
from fourcorner.entrypoints.harness.servers import Answer, Call
from fourcorner.entrypoints.http.throttle import FailureTracker

EXAMPLES = 60
THROTTLED = Answer(429, {"code": "AT-1029"})


@attrs.define
class Carried:
    """What both fakes share across examples: the service's state outside any example."""

    orgs_asked: int = 0
    refuse_every: int = 0  # 0: refuse no organisation; n: refuse every nth asked for
    now: float = 0.0
    throttle_limit: int = 0  # failed authentications a side allows at once (0: no throttle)
    throttled: int = 0
    failed: int = 0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class FakeSide:
    """One side: answers every call the machine makes, in the shapes it reads. The organisation
    refused (``Carried.refuse_every``) and the side's throttle of failed authentications
    (fourcorner serve's, over a minute, on ``Carried``'s clock) depend on earlier examples."""

    def __init__(self, name: str, carried: Carried, fault: str | None = None) -> None:
        self.base_url = f"http://{name}.test"
        self.name = name
        self.carried = carried
        self.fault = fault
        self.keys: dict[str, bool] = {}  # secret -> revoked
        self.key_ids: dict[str, str] = {}
        limit = carried.throttle_limit
        self.throttle = FailureTracker(limit, 60.0, clock=carried.clock) if limit else None

    def send(self, call: Call) -> Answer:
        carried = self.carried
        throttle = self.throttle
        if throttle is not None and throttle.retry_after(["addr"]):
            carried.throttled += 1
            return THROTTLED
        if call.api_key is not None:
            if self.keys.get(call.api_key, True):
                carried.failed += 1
                if throttle is not None:
                    throttle.failed(["addr"])
                return Answer(401, {"code": "AT-1018"})
            return Answer(200, {})
        path = call.path
        if self.fault is not None and re.fullmatch(self.fault, f"{call.method} {path}"):
            return Answer(500, {"code": "AT-1500"})
        if call.method == "POST" and path == "/orgs":
            if self.name == "sut":
                carried.orgs_asked += 1
            every = carried.refuse_every
            if every and carried.orgs_asked % every == 0:
                return THROTTLED
            return Answer(201, {"id": str(uuid.uuid4()), "legalName": call.body["legalName"]})
        if call.method == "GET" and path == "/users/me":
            return Answer(200, {"id": str(uuid.uuid5(uuid.NAMESPACE_URL, call.email))})
        if call.method == "GET" and path == "/orgs":
            return Answer(200, {"items": [], "nextCursor": None})
        if path.endswith("/alltouse"):
            item = {"id": str(uuid.uuid5(uuid.NAMESPACE_URL, path)), "environment": "TEST"}
            return Answer(200, {"items": [item]})
        if call.method == "POST" and path.endswith("/api_keys"):
            key_id, secret = str(uuid.uuid4()), uuid.uuid4().hex
            self.keys[secret] = False
            self.key_ids[key_id] = secret
            return Answer(201, {"id": key_id, "key": secret})
        if call.method == "DELETE" and "/api_keys/" in path:
            secret = self.key_ids.get(path.rsplit("/", 1)[1])
            if secret is None:
                return Answer(404, {"code": "AT-1404"})
            self.keys[secret] = True
            return Answer(200, {})
        if call.method == "POST" and path.endswith("/transactions"):
            return Answer(202, {"transactionId": str(uuid.uuid4())})
        if call.method == "POST":
            return Answer(201, {"id": str(uuid.uuid4())})
        return Answer(200, {})


def _run(
    carried: Carried, fault: str | None = None, seed: int = 3, examples: int = EXAMPLES
) -> Any:
    failures = FailedAuthentications(clock=carried.clock, sleep=carried.sleep)
    shared = Run(
        FakeSide("sut", carried, fault),  # type: ignore[arg-type]  # a Target's send, faked
        FakeSide("model", carried),  # type: ignore[arg-type]
        "fake",
        failures=failures,
    )
    findings, error = run_machine(shared, max_examples=examples, steps=20, seed=seed)
    return shared, findings, error


def test_records_refused_depending_on_earlier_examples_leave_the_draws_alone():
    # every third organisation asked for is refused, whichever example asks: an example run
    # again meets other refusals than the first time (before: FlakyStrategyDefinition)
    carried = Carried(refuse_every=3)
    shared, findings, error = _run(carried)
    assert error is None
    assert findings == []
    assert shared.examples >= EXAMPLES


def test_failed_authentications_stay_within_the_allowance_of_a_throttled_service():
    # fourcorner serve's throttle (10 failures at once, then one every 6 s), counted on a clock
    # that only the harness's waiting moves: however fast the examples, it is never reached
    carried = Carried(throttle_limit=10)
    _, findings, error = _run(carried, seed=5, examples=400)
    assert (error, findings) == (None, [])
    assert carried.throttled == 0
    # each side counted more failures than its throttle allows at once
    assert carried.failed > 2 * 10


def test_a_divergence_is_still_found_and_shrunk_while_answers_carry_over():
    carried = Carried(refuse_every=3, throttle_limit=10)
    _, findings, error = _run(carried, fault=r"GET /orgs/[^/]+/members")
    assert error is None
    assert len(findings) == 1
    (finding,) = findings
    assert finding.what.startswith("GET /orgs/"), finding.what
    # the two organisations every example starts with, and the list of members
    assert len(finding.steps) == 3, [f"{s.sut.method} {s.sut.path}" for s in finding.steps]


def test_the_allowance_of_failed_authentications_waits_after_its_burst():
    now = [100.0]
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        now[0] += seconds

    allowance = FailedAuthentications(burst=4, interval=7.5, clock=lambda: now[0], sleep=sleep)
    for _ in range(4):
        allowance.spend()
    assert waits == []
    allowance.spend()
    assert waits == [7.5]
    now[0] += 30.0  # time given back: four more at once
    for _ in range(4):
        allowance.spend()
    assert waits == [7.5]
