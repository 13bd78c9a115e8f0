"""How the PostgreSQL adapter's driver errors become domain errors
(``adapters.postgres.connection.translate``), and how the HTTP edge answers a transient
conflict: a deadlock PostgreSQL broke, or a transaction it could not serialise, is a
``ConcurrentChange`` (503 ``AT-1507`` with ``Retry-After``, logged as ``storage.conflict``),
never "the database cannot be reached"."""

from __future__ import annotations

import json
import logging

import psycopg
import pytest
from psycopg import errors
from psycopg_pool import PoolTimeout

from fourcorner.adapters.postgres.connection import translate
from fourcorner.domain.errors import ConcurrentChange, Conflict, ServiceUnavailable
from fourcorner.entrypoints.http.app import error_response


@pytest.mark.parametrize(
    "error",
    [errors.DeadlockDetected("deadlock detected"), errors.SerializationFailure("serialize")],
)
def test_a_deadlock_or_a_serialisation_failure_is_a_concurrent_change_logged_as_one(
    error: psycopg.Error, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="fourcorner.storage"):
        translated = translate(error)
    assert isinstance(translated, ConcurrentChange)
    assert "cannot be reached" not in translated.message()
    assert "conflicted" in translated.message()
    [record] = caplog.records
    assert record.event == "storage.conflict"  # type: ignore[attr-defined]
    assert record.sqlstate == error.sqlstate  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (psycopg.OperationalError("server closed the connection"), "cannot be reached"),
        (PoolTimeout("no connection"), "no database connection came free"),
        (errors.QueryCanceled("canceling statement"), "cannot be reached"),
    ],
)
def test_an_outage_is_still_unavailable_and_not_a_conflict(
    error: psycopg.Error, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="fourcorner.storage"):
        translated = translate(error)
    assert type(translated) is ServiceUnavailable
    assert reason in translated.message()
    assert not caplog.records


def test_a_unique_clash_is_still_a_conflict() -> None:
    assert isinstance(translate(errors.UniqueViolation("duplicate key")), Conflict)


def test_a_concurrent_change_is_answered_503_with_retry_after() -> None:
    response = error_response(ConcurrentChange(), "req-1")
    assert response.status == 503
    assert response.headers["Retry-After"] == "1"
    assert response.text is not None
    body = json.loads(response.text)
    assert body["code"] == "AT-1507"
    assert body["error"] == (
        "A change made at the same time conflicted with this one in the database; "
        "try again in 1 second."
    )
