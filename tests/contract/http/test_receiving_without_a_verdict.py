"""A received document that the validator gives no verdict on is received all the same, with a
receipt and no validation result: the rules raising an error on it, the validator reading it as
no document it checks, or the validator failing. Answering with an error instead would only
make the sender send the same document again and again."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

import pytest

from fourcorner.domain.errors import Detail, InvalidInput, RulesFailed, ServiceUnavailable
from sbd_factory import make_sbd

from .conftest import _start, settings_for
from .test_as4_endpoint import BOB, error_code, message, post, received, setup
from .test_participants import gln


class Failing:
    """A validator that gives no verdict, as ``failure`` says."""

    def __init__(self, failure: Exception) -> None:
        self.failure = failure

    async def validate(self, document: Path | bytes, *, low_priority: bool = False) -> Any:
        raise self.failure

    async def aclose(self) -> None:
        return None


@pytest.mark.parametrize(
    "failure",
    [
        RulesFailed(reason="an XPath error"),
        InvalidInput([Detail("$", "not a document the rules check")]),
        RuntimeError("the validation worker failed: a bug"),
    ],
    ids=["rules", "unreadable", "bug"],
)
async def test_a_document_without_a_verdict_is_received_with_its_receipt(
    tmp_path: Any, aiohttp_client: Any, shared_pki: Path, failure: Exception, caplog: Any
) -> None:
    shutil.copytree(shared_pki, tmp_path / "pki")
    api = await _start(settings_for("sqlite", tmp_path), aiohttp_client, validator=Failing(failure))
    b, receiver, path = await setup(api)
    sender = f"0088:{gln(93)}"
    msg = message(api, make_sbd(sender=sender, receiver=receiver), sender=sender, receiver=receiver)
    status, answer = await post(api, path, msg)
    assert status == 200 and error_code(answer) is None and b"Receipt" in answer
    [tx] = await received(api, b["id"])
    _, artefacts = await api.call(
        "GET", f"/orgs/{b['id']}/transactions/{tx['id']}/artefacts", as_=BOB
    )
    assert "VALIDATION_RESULT" not in {a["type"] for a in artefacts["items"]}
    failed = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert (len(failed) == 1) is isinstance(failure, RuntimeError)  # a bug of ours is logged


async def test_a_validator_shutting_down_asks_the_sender_to_try_again(
    tmp_path: Any, aiohttp_client: Any, shared_pki: Path
) -> None:
    shutil.copytree(shared_pki, tmp_path / "pki")
    closing = Failing(ServiceUnavailable(reason="the validator is shutting down"))
    api = await _start(settings_for("sqlite", tmp_path), aiohttp_client, validator=closing)
    b, receiver, path = await setup(api)
    sender = f"0088:{gln(94)}"
    msg = message(api, make_sbd(sender=sender, receiver=receiver), sender=sender, receiver=receiver)
    status, _ = await post(api, path, msg)
    assert status == 503
    assert await received(api, b["id"]) == []
