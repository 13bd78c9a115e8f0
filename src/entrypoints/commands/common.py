"""What the commands share: the program's name and version, the one-line messages on stderr,
the default wait for the database, and where the database is (as a command names it)."""

from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, version

from fourcorner.entrypoints import preflight
from fourcorner.entrypoints.config import Settings

PROG = "fourcorner"
DB_WAIT = 30.0


def say(line: str) -> None:
    """``line`` on stderr, after the program's name (``fourcorner: error: ...``)."""
    print(f"{PROG}: {line}", file=sys.stderr, flush=True)


def database_location(settings: Settings) -> str:
    """Where the configured database is, without a user or password."""
    if settings.storage_kind == "postgres":
        schema = settings.database_schema or "the default schema"
        return f"postgresql://{preflight.database_address(settings.database)} ({schema})"
    if settings.storage_kind == "sqlite":
        return f"sqlite:///{settings.sqlite_path}"
    return "memory://"


def package_version() -> str:
    """The installed version of ``fourcorner`` (``unknown`` in a source tree)."""
    try:
        return version("fourcorner")
    except PackageNotFoundError:  # run from a source tree that was not installed
        return "unknown"
