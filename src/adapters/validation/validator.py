"""``SaxonValidator``: the ``DocumentValidator`` port over the published rules, run exactly.

Each rule set (``.sch``) is compiled with SchXslt 1.x and run by Saxon-HE in worker processes
(``adapters.validation.pool``); a document is read first by intake's hardened parser, in the
worker too, so the server's process does no XML work and holds no document in memory (a file
is passed by path). Nothing starts until the first document arrives.
"""

from __future__ import annotations

import os
from pathlib import Path

from fourcorner.adapters.validation.pool import WorkerPool, cores
from fourcorner.adapters.validation.rules import data_dir
from fourcorner.adapters.validation.worker import Checked
from fourcorner.domain.errors import Detail, InvalidInput, RulesFailed
from fourcorner.domain.validation import FailedAssert, Flag, ValidationResult

DEFAULT_TIMEOUT = 300.0


class SaxonValidator:
    """``workers``: processes checking documents at once (0: one per core); ``timeout``:
    seconds one document may take before its worker is stopped."""

    def __init__(self, workers: int = 0, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.pool = WorkerPool(workers or cores(), timeout, data_dir())

    async def validate(self, document: Path | bytes) -> ValidationResult:
        kind, value = await self.pool.call(_source(document))
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
