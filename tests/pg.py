"""PostgreSQL for tests: where it is, whether it is reachable, and a schema of one's own.

Outside CI an unreachable server skips the PostgreSQL tests with the reason; under CI=true
it fails them instead, so CI never passes without having run them.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

URL = os.environ.get("FOURCORNER_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
_reachable: bool | None = None
_why = ""


def reachable() -> bool:
    global _reachable, _why
    if _reachable is None:
        import psycopg

        try:
            with psycopg.connect(URL, connect_timeout=3) as conn:
                conn.execute("SELECT 1")
            _reachable = True
        except psycopg.Error as e:
            _reachable, _why = False, str(e).strip().splitlines()[0] if str(e) else repr(e)
    return _reachable


def require() -> None:
    """Skip (or, under CI=true, fail) when PostgreSQL is not reachable."""
    if reachable():
        return
    message = f"PostgreSQL not reachable at {URL} ({_why}); set FOURCORNER_TEST_DATABASE_URL"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


@contextmanager
def fresh_schema(prefix: str = "fc_test") -> Iterator[str]:
    """A schema created for the caller and dropped (with everything in it) afterwards."""
    import psycopg

    require()
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(URL, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{name}"')
    try:
        yield name
    finally:
        with psycopg.connect(URL, autocommit=True) as conn:
            # a connection left in a transaction on the schema fails the test, never hangs it
            conn.execute("SET lock_timeout = '60s'")
            conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
