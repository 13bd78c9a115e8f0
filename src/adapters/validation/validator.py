"""``SaxonValidator``: the ``DocumentValidator`` port over the published rules, run exactly.

Each rule set (``.sch``) is compiled with SchXslt 1.x and run by Saxon-HE in worker processes
(``adapters.validation.pool``); a document is read first by intake's hardened parser, in the
worker too, so the server's process does no XML work and holds no document in memory (a file
is passed by path). Nothing starts until the first document arrives. An answer is kept, by the
SHA-256 of the document's bytes, in a bounded cache (``adapters.validation.cache``, which says
why that is sound and what it tells whom): the same bytes checked again are answered from it.
A check asked for with ``low_priority`` (``POST /validation``) waits for a worker behind every
other document waiting (``WorkerPool.call``).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from fourcorner.adapters.validation.cache import Answers, digest_bytes, digest_file, digest_small
from fourcorner.adapters.validation.pool import CLOSED, WorkerPool, default_workers
from fourcorner.adapters.validation.rules import data_dir
from fourcorner.adapters.validation.worker import Checked
from fourcorner.domain.errors import Detail, InvalidInput, RulesFailed, ServiceUnavailable
from fourcorner.domain.validation import FailedAssert, Flag, ValidationResult

DEFAULT_TIMEOUT = 300.0
DEFAULT_CACHE = 16 * 1024 * 1024
_INLINE_HASH = 256 * 1024  # bytes hashed on the event loop; larger in a thread (a file too)


class SaxonValidator:
    """``workers``: processes checking documents at once (0: ``default_workers()``); ``timeout``:
    seconds one document may take before its worker is stopped; ``cache``: bytes of answers
    kept for documents checked again (0: none)."""

    def __init__(
        self, workers: int = 0, timeout: float = DEFAULT_TIMEOUT, cache: int = DEFAULT_CACHE
    ) -> None:
        self.pool = WorkerPool(workers or default_workers(), timeout, data_dir())
        self.answers = Answers(cache)

    async def validate(
        self, document: Path | bytes, *, low_priority: bool = False
    ) -> ValidationResult:
        if self.pool.closed:  # closed: no answer, not even a kept one
            raise ServiceUnavailable(reason=CLOSED)
        source = _source(document)
        key = await self._key(source) if self.answers.limit else None
        answer = self.answers.get(key) if key is not None else None
        if answer is None:
            answer = await self.pool.call(source, low_priority=low_priority)
            if key is not None:
                self.answers.put(key, answer)
        kind, value = answer
        if kind == "invalid":
            raise InvalidInput([Detail(field, problem) for field, problem in value])
        if kind == "failed":
            raise RulesFailed(reason=value)
        if kind == "error":
            raise RuntimeError(f"the validation worker failed:\n{value}")
        if isinstance(value, Checked):
            return _checked(value)
        return ValidationResult.not_checked(value.local, value.customization_id, value.profile_id)

    async def aclose(self) -> None:
        self.pool.close()

    @staticmethod
    async def _key(source: bytes | str) -> bytes | None:
        """The cache's key for ``source``; None when its file cannot be read (the worker
        then answers for it, as without a cache). A small file (the usual document, just
        written and still in the page cache) is read and hashed here: a thread hop would cost
        more than the read."""
        if isinstance(source, bytes):
            if len(source) <= _INLINE_HASH:
                return digest_bytes(source)
            return await asyncio.to_thread(digest_bytes, source)
        try:
            return digest_small(source, _INLINE_HASH) or await asyncio.to_thread(
                digest_file, source
            )
        except OSError:
            return None


def _source(document: Path | bytes) -> bytes | str:
    """What the worker is sent: the bytes, or the file's absolute path (the worker's working
    directory need not be ours; making it absolute reads no file)."""
    return document if isinstance(document, bytes) else os.path.abspath(document)


def _flag(text: str) -> Flag:
    """The rules flag each assert ``fatal`` or ``warning``; an assert without a flag (or with
    another one) fails the document, as Schematron has it."""
    return Flag.WARNING if text == Flag.WARNING.value else Flag.FATAL


def _checked(value: Checked) -> ValidationResult:
    located = value.located
    return ValidationResult.of(
        root=located.local,
        customization_id=located.customization_id,
        profile_id=located.profile_id,
        rules=value.rules,
        failed=[FailedAssert(i, _flag(flag), where, text) for i, flag, where, text in value.failed],
        svrl=value.svrl,
    )
