"""Fixtures shared by every suite."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import pg
from adapters.validation import SaxonValidator


@pytest.fixture(scope="session")
def postgres_url_and_schema() -> Iterator[tuple[str, str]]:
    """``(url, schema)``: the test PostgreSQL (``FOURCORNER_TEST_DATABASE_URL``) and a schema
    of this run's own (``fc_test_<hex>``), created at first use and dropped with everything in
    it at the end of the session, so concurrent runs never meet. Unreachable: the test is
    skipped with the reason, or fails when ``CI=true``."""
    with pg.fresh_schema("fc_test") as schema:
        yield pg.URL, schema


@pytest.fixture(scope="session")
def validator() -> Iterator[SaxonValidator]:
    """One ``SaxonValidator`` for the run: its worker processes compile the rules once."""
    shared = SaxonValidator(workers=2)
    yield shared
    shared.pool.close()
