"""A webhook sender in memory: keeps every delivery attempt instead of POSTing it.

Each attempt's URL, body and headers are kept in ``attempts`` with the result it was given,
for tests and embedders to read. Every URL answers 200 unless told otherwise: ``fail`` it
(with a status, or a connection error) or make it ``time_out`` (the result the aiohttp sender
gives when the receiver does not answer in time), and ``heal`` it again.
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from fourcorner.application.ports import SendResult

TIMED_OUT = "timed out"  # the error of an attempt that got no answer in time (as over HTTP)


@attrs.frozen
class WebhookAttempt:
    url: str
    body: bytes
    headers: dict[str, str]
    result: SendResult

    def json(self) -> Any:
        return json.loads(self.body)


class InMemoryWebhookSender:
    def __init__(self) -> None:
        self.attempts: list[WebhookAttempt] = []
        self._answers: dict[str, SendResult] = {}

    def fail(self, url: str, status: int | None = 500, *, error: str | None = None) -> None:
        """Attempts to ``url`` get ``status`` (None: no answer, ``error`` instead)."""
        if status is None:
            self._answers[url] = SendResult(0.0, error=error or "ConnectionRefusedError")
        else:
            self._answers[url] = SendResult(0.0, status_code=status, response_body=error)

    def time_out(self, url: str) -> None:
        self._answers[url] = SendResult(0.0, error=TIMED_OUT)

    def heal(self, url: str) -> None:
        self._answers.pop(url, None)

    def to(self, url: str) -> list[WebhookAttempt]:
        """The attempts made to ``url``, in order."""
        return [a for a in self.attempts if a.url == url]

    async def send(self, url: str, body: bytes, headers: dict[str, str]) -> SendResult:
        result = self._answers.get(url, SendResult(0.0, status_code=200, response_body=""))
        self.attempts.append(WebhookAttempt(url, body, dict(headers), result))
        return result

    async def aclose(self) -> None:
        """Nothing to close; here so the container may manage it as it does the aiohttp one."""
