"""Fixtures shared by every suite, and the guard that a test run adds no file to the work tree
(every file a test writes goes to a temporary folder)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

import pg
from fourcorner.adapters.validation import SaxonValidator
from validation_cases import Saxon

pytest_plugins = ["dnsmasq", "sml_service"]  # a real DNS server; the SML that feeds it

# No per-example deadline: the suite runs on a 2-core machine beside other work, where an
# example's time says more of the machine than of the code (a property that must be fast is
# measured in bench/, never by a timed test); a test may still set its own
settings.register_profile("fourcorner", deadline=None)
settings.load_profile("fourcorner")

ROOT = Path(__file__).resolve().parents[1]
_BEFORE = pytest.StashKey[frozenset[str] | None]()


def untracked_files() -> frozenset[str] | None:
    """The repository's untracked files that git does not ignore, or ``None`` outside a git
    work tree. (Edits to tracked files are not watched: one may edit while tests run.)"""
    try:
        run = subprocess.run(
            ["git", "ls-files", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return frozenset(run.stdout.splitlines()) if run.returncode == 0 else None


def pytest_sessionstart(session: Any) -> None:
    session.config.stash[_BEFORE] = untracked_files()


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    before = session.config.stash.get(_BEFORE, None)
    after = untracked_files()
    if before is None or after is None:
        return
    appeared = sorted(after - before)
    if appeared:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(
                "the test run wrote files into the work tree (tests must write to temporary "
                "folders): " + ", ".join(appeared),
                red=True,
            )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


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


@pytest.fixture(scope="session")
def saxon() -> Saxon:
    """Saxon with SchXslt's pipeline, compiling the published rules as the worker does."""
    return Saxon()
