"""The calls of the stateful test (``harness.machine``): each goes to the service under test and
to the reference model alike, and the two answers are compared (``harness.comparison``); and
the documents the rules send."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from hypothesis.stateful import RuleBasedStateMachine

from fourcorner.adapters.sbdh.writer import write_sbd
from fourcorner.domain.envelope import Identifier, Sbdh
from fourcorner.entrypoints.harness import strategies as hs
from fourcorner.entrypoints.harness.comparison import SIDES, Divergence, Normal, Step, short
from fourcorner.entrypoints.harness.records import Ref, Run
from fourcorner.entrypoints.harness.servers import Answer, Call


class ComparingMachine(RuleBasedStateMachine):
    """A state machine whose calls go to both sides of ``run`` and must agree."""

    def __init__(self, run: Run) -> None:
        super().__init__()
        self.run = run
        self.steps: list[Step] = []
        self.normal = {side: Normal() for side in SIDES}

    # --- the calls --------------------------------------------------------------

    def call(
        self,
        method: str,
        path: Callable[[str], str],
        email: str,
        *,
        superadmin: bool = False,
        body: Callable[[str], Any] | None = None,
        query: Callable[[str], tuple[tuple[str, str], ...]] | None = None,
        keep: tuple[str, ...] = (),
        api_key: Callable[[str], str] | None = None,
        headers: tuple[tuple[str, str], ...] = (),
    ) -> tuple[Answer, Answer]:
        calls = {
            side: Call(
                method,
                path(side),
                email,
                superadmin,
                None if body is None else body(side),
                () if query is None else query(side),
                None if api_key is None else api_key(side),
                headers,
            )
            for side in SIDES
        }
        step = Step(calls["sut"], calls["model"])
        self.steps.append(step)
        step.sut_answer = self.run.sut.send(step.sut)
        step.model_answer = self.run.model.send(step.model)
        got = self.normal["sut"].answer(step.sut_answer, keep)
        want = self.normal["model"].answer(step.model_answer, keep)
        if step.sut_answer.status != step.model_answer.status or got != want:
            raise Divergence(
                f"{method} {step.model.path}: the service answered "
                f"{step.sut_answer.status} {short(got)}, the model "
                f"{step.model_answer.status} {short(want)}",
                self.steps,
            )
        return step.sut_answer, step.model_answer

    def created(self, answers: tuple[Answer, Answer]) -> Ref | None:
        sut, model = answers
        if sut.status in (200, 201) and isinstance(sut.body, dict) and "id" in sut.body:
            return Ref(str(sut.body["id"]), str(model.body["id"]))
        return None

    def user_id(self, email: str) -> Ref | None:
        """The user's id on each side (None: both refused to tell)."""
        answers = self.call("GET", lambda side: "/users/me", email, keep=("id", "email"))
        return self.created(answers)


def sbd_of(sender: str, receiver: str, document: Any, tag: str, instance: int) -> bytes:
    """An SBD of ``document`` from ``sender`` to ``receiver`` with an instance identifier of
    the example (the same ``instance`` twice: the same document sent again)."""
    doc_type = document.document_type
    standard, _, rest = doc_type.value.partition("::")
    envelope = Sbdh(
        sender=Identifier(hs.PARTICIPANT_SCHEME, sender),
        receiver=Identifier(hs.PARTICIPANT_SCHEME, receiver),
        instance_identifier=str(uuid.uuid5(uuid.NAMESPACE_URL, f"harness:{tag}:{instance}")),
        standard=standard,
        type_version="2.1",
        type=rest.partition("##")[0],
        created_at=datetime(2026, 1, 15, 9, 30, tzinfo=UTC),
        document_type=doc_type,
        process=Identifier(hs.PROCESS_SCHEME, hs.BILLING_PROCESS),
        country_c1=document.seller[1],
    )
    return write_sbd(envelope, document.xml().split(b"?>", 1)[1].strip())
