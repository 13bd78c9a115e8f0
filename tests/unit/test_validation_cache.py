"""The cache of validation answers: the same bytes are answered once by the rules, then from
the cache (as bytes or as a file); other bytes, a worker's failure and a closed validator are
not; the cache stays within its bound, least recently used out first."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from fourcorner.adapters.validation import SaxonValidator
from fourcorner.adapters.validation.cache import Answers, cost, digest_bytes, digest_small
from fourcorner.adapters.validation.document import Located
from fourcorner.adapters.validation.rules import Syntax
from fourcorner.adapters.validation.worker import Checked
from fourcorner.domain.errors import InvalidInput, RulesFailed, ServiceUnavailable
from validation_cases import EXAMPLES

BASE = (EXAMPLES / "base-example.xml").read_bytes()
LOCATED = Located("ns", "Invoice", Syntax.UBL, False, "c", "p")


def checked(svrl: bytes = b"<svrl/>", failed: int = 0) -> tuple[str, Checked]:
    asserts = [(f"BR-{n}", "fatal", "/Invoice", "text") for n in range(failed)]
    return "ok", Checked(LOCATED, "rules", asserts, svrl)


class Counting:
    """Stands for the worker pool: answers ``answer`` and counts the documents it is given."""

    def __init__(self, answer: tuple[str, Any]) -> None:
        self.answer = answer
        self.asked: list[bytes | str] = []
        self.closed = False

    async def call(self, request: bytes | str, *, low_priority: bool = False) -> tuple[str, Any]:
        self.asked.append(request)
        return self.answer

    def close(self) -> None:
        self.closed = True


def with_pool(answer: tuple[str, Any], cache: int = 1 << 20) -> tuple[SaxonValidator, Counting]:
    validator = SaxonValidator(workers=1, cache=cache)
    validator.pool.close()  # never started: no worker is made
    counting = Counting(answer)
    validator.pool = counting  # type: ignore[assignment]
    return validator, counting


async def test_the_same_bytes_are_checked_once():
    validator, pool = with_pool(checked(failed=1))
    first = await validator.validate(b"<Invoice/>")
    again = await validator.validate(b"<Invoice/>")
    assert first == again and not first.valid
    assert pool.asked == [b"<Invoice/>"]
    assert (validator.answers.hits, validator.answers.misses) == (1, 1)


@pytest.mark.parametrize("size", [20, 256 * 1024, 256 * 1024 + 1, 3 * 1024 * 1024])
async def test_a_file_with_the_same_bytes_is_answered_from_the_cache(tmp_path: Path, size: int):
    """Small files are hashed on the event loop, larger ones in a thread: the same key."""
    document = b"<Invoice>" + b" " * (size - 19) + b"</Invoice>"
    assert len(document) == size
    validator, pool = with_pool(checked())
    (tmp_path / "doc.xml").write_bytes(document)
    (tmp_path / "other.xml").write_bytes(document.replace(b" ", b"\n", 1))
    await validator.validate(document)
    await validator.validate(tmp_path / "doc.xml")
    await validator.validate(tmp_path / "other.xml")
    assert len(pool.asked) == 2


def test_a_small_file_is_hashed_whole_and_a_larger_one_not_at_all(tmp_path: Path):
    path = tmp_path / "doc.xml"
    path.write_bytes(b"x" * 100)
    assert digest_small(str(path), 100) == digest_bytes(b"x" * 100)
    assert digest_small(str(path), 99) is None


async def test_other_bytes_are_checked():
    validator, pool = with_pool(checked())
    await validator.validate(b"<Invoice/>")
    await validator.validate(b"<Invoice />")
    assert len(pool.asked) == 2


async def test_refusals_are_kept_and_raised_again():
    validator, pool = with_pool(("invalid", [("document", "not well-formed")]))
    for _ in range(2):
        with pytest.raises(InvalidInput):
            await validator.validate(b"<")
    assert len(pool.asked) == 1
    validator, pool = with_pool(("failed", "cannot convert"))
    for _ in range(2):
        with pytest.raises(RulesFailed):
            await validator.validate(b"<Invoice/>")
    assert len(pool.asked) == 1


async def test_a_worker_failure_is_not_kept():
    validator, pool = with_pool(("error", "Traceback ..."))
    for _ in range(2):
        with pytest.raises(RuntimeError):
            await validator.validate(b"<Invoice/>")
    assert len(pool.asked) == 2 and len(validator.answers) == 0


async def test_no_cache_checks_every_time():
    validator, pool = with_pool(checked(), cache=0)
    await validator.validate(b"<Invoice/>")
    await validator.validate(b"<Invoice/>")
    assert len(pool.asked) == 2


async def test_a_closed_validator_answers_nothing_even_kept():
    validator, pool = with_pool(checked())
    await validator.validate(b"<Invoice/>")
    pool.closed = True
    with pytest.raises(ServiceUnavailable):
        await validator.validate(b"<Invoice/>")


async def test_an_unreadable_file_goes_to_the_worker(tmp_path: Path):
    validator, pool = with_pool(("error", "FileNotFoundError"))
    with pytest.raises(RuntimeError):
        await validator.validate(tmp_path / "missing.xml")
    assert pool.asked == [str(tmp_path / "missing.xml")]


def test_the_cache_stays_within_its_bound_least_recently_used_out_first():
    one = cost(checked(b"x" * 1000))
    answers = Answers(limit=8 * one)
    keys = [digest_bytes(bytes([n])) for n in range(9)]
    for key in keys[:8]:
        answers.put(key, checked(b"x" * 1000))
    assert answers.size == answers.limit and len(answers) == 8
    assert answers.get(keys[0]) is not None  # now the most recently used
    answers.put(keys[8], checked(b"x" * 1000))
    assert answers.size <= answers.limit and len(answers) == 8
    assert answers.get(keys[1]) is None  # the least recently used went
    assert all(answers.get(k) is not None for k in (keys[0], *keys[2:]))


def test_an_answer_larger_than_an_eighth_of_the_bound_is_not_kept():
    answers = Answers(limit=8 * 1024)
    answers.put(b"k", checked(b"x" * 2048))
    assert len(answers) == 0 and answers.size == 0


async def test_the_real_rules_give_the_same_result_from_the_cache(validator):
    own = SaxonValidator(workers=1)
    try:
        first = await own.validate(BASE)
        again = await own.validate(BASE)
        assert first == again and first.valid and first.svrl == again.svrl
        assert own.answers.hits == 1
        broken = BASE.replace(b"<cbc:IssueDate>2017-11-13</cbc:IssueDate>", b"")
        results = await asyncio.gather(own.validate(broken), own.validate(BASE))
        assert [r.valid for r in results] == [False, True]
    finally:
        await own.aclose()
