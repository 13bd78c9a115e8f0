"""How the stateful test compares the service's answers with the model's.

An answer is compared by its status; an error by its code and the fields it points at; a body
once what legitimately differs between two deployments is put aside: each id becomes ``#n``
(the order in which that side first showed it), times, keys, secrets and cursors count by
their presence, and what a service's workers change after the answer is left out. A call
whose answers differ raises ``Divergence`` with the example's calls (``Step``) up to it.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

from fourcorner.entrypoints.harness.servers import Answer, Call

SIDES = ("sut", "model")
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
# values that differ between two deployments by design: compared by presence only
_OPAQUE = frozenset({"key", "secret", "prefix", "nextCursor", "uploadUrl", "url", "apUrl"})
# what a service's workers change after the answer (sending): left out of the comparison
_ASYNC = frozenset(
    {"transactionStatus", "serviceError", "receiverSP", "receiverCountry", "mlsResponseCode"}
)


@attrs.define
class Step:
    """A call made on both sides, with the service's answer and the model's."""

    sut: Call
    model: Call
    sut_answer: Answer | None = None
    model_answer: Answer | None = None


class Divergence(AssertionError):
    """The service answered otherwise than the model; ``steps`` are the calls of the
    example up to and including the one whose answers differ."""

    def __init__(self, what: str, steps: list[Step]) -> None:
        super().__init__(what)
        self.what = what
        self.steps = list(steps)


class Normal:
    """One side's view of answers: each id it shows becomes ``#n`` (n: the order of first
    appearance in the example)."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}

    def __call__(self, value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: self(value[k], k) for k in sorted(value) if k not in _ASYNC}
        if isinstance(value, list):
            return [self(v) for v in value]
        if isinstance(value, str):
            if key in _OPAQUE:
                return "<opaque>"
            if _UUID.match(value):
                return self.ids.setdefault(value, f"#{len(self.ids)}")
            if _TIME.match(value):
                return "<time>"
        return value

    def answer(self, answer: Answer, keep: tuple[str, ...] = ()) -> Any:
        """The answer as compared: an error by its code and the fields it names; a body
        whole, or only its ``keep`` fields."""
        body = answer.body
        if answer.status >= 400 and isinstance(body, dict):
            fields = sorted(d.get("field", "") for d in body.get("details") or [])
            return {"code": body.get("code"), "fields": fields}
        if keep and isinstance(body, dict):
            body = {k: body.get(k) for k in keep}
        return self(body)


def short(value: Any) -> str:
    """``value`` as a divergence's message shows it: its repr, cut after 600 characters."""
    text = repr(value)
    return text if len(text) <= 600 else text[:600] + "..."
