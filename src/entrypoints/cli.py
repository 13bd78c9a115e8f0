"""``fourcorner``: serve, worker, migrate, token, check, harness.

A problem that stops a command (a setting that cannot be used, a port in use, a database that
does not answer, a data dir that cannot be written) is printed as one line,
``fourcorner: error: <what is wrong, which setting, what to do>``, and the command exits with
status 2 (the configuration or the command line) or 1 (the machine or a service), without a
traceback. ``FOURCORNER_`` variables that are not settings are named in a warning line.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import textwrap
from collections.abc import Sequence
from datetime import timedelta
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import attrs
import psycopg

from fourcorner.adapters import private
from fourcorner.domain.errors import DomainError
from fourcorner.entrypoints import preflight
from fourcorner.entrypoints.config import ConfigError, Settings, unknown_environment
from fourcorner.entrypoints.preflight import StartupError

# The server's modules (aiohttp, the container and every adapter) are imported by the commands
# that need them, so that `--help`, `--version` and refusals answer at once.

PROG = "fourcorner"
DB_WAIT = 30.0
CONFIGURATION = """\
Settings come from FOURCORNER_* environment variables, or a TOML file named by
FOURCORNER_CONFIG_FILE (the same names, lower-cased, without the prefix); the environment
wins. docs/operations.md lists every setting; `fourcorner check` verifies them."""


def say(line: str) -> None:
    print(f"{PROG}: {line}", file=sys.stderr, flush=True)


def _logging(level: str) -> None:
    from fourcorner.entrypoints.http.app import json_log_formatter

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(json_log_formatter())
    handler.setLevel(level.upper())  # the events logger passes INFO on for the metrics
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)


def private_files(settings: Settings) -> None:
    """Make what the service stores its own user's alone, before anything is written.

    The umask covers every file created from now on, SQLite's journal files included. A data
    dir that others may enter was made by an earlier version: the data dir and the service's
    own entries in it (``keys/``, ``pki/``, ``blobs/`` and everything in them, the SQLite
    files) are tightened to folders 0700 and files 0600, and the change is logged; nothing
    else in the data dir is touched. A data dir that is already 0700 is not walked, since no
    other user can reach anything below it. The SQLite files are checked wherever
    ``FOURCORNER_DATABASE_URL`` puts them.
    """
    from fourcorner.adapters.pki.sealing import KEYS_DIR
    from fourcorner.adapters.pki.testpki import PKI_DIR
    from fourcorner.entrypoints.container import BLOBS_DIR

    os.umask(private.UMASK)
    log = logging.getLogger("fourcorner")
    data_dir = Path(settings.data_dir).resolve()  # a link to the data dir: the dir itself
    below = data_dir.is_dir() and not private.is_private(data_dir)
    private.make_dirs(data_dir)
    files = [data_dir]
    if settings.sqlite_path:
        db = Path(settings.sqlite_path)
        files += [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")]
    done = private.tighten(files, below=False)
    if below:
        owned_dirs = (KEYS_DIR, PKI_DIR, BLOBS_DIR)
        owned = private.tighten([data_dir / name for name in owned_dirs], below=True)
        done = private.Tightened(done.changed + owned.changed, done.failed + owned.failed)
    if done.changed:
        log.warning(
            "files of the service were readable by other users: tightened to folders 0700, "
            "files 0600",
            extra={"data_dir": str(data_dir), "tightened": len(done.changed)},
        )
    for path, reason in done.failed:
        log.error(
            "cannot make a file private to the service's user",
            extra={"path": str(path), "reason": reason},
        )


def _materials(settings: Settings) -> None:
    """The at-rest key file and the configured certificate files can be used."""
    from fourcorner.entrypoints import operator

    preflight.at_rest_key_file(settings)
    if settings.trust_anchors_file:
        operator.trust_anchors(settings)
    if settings.operator_certs_dir:
        for environment in ("test", "prod"):
            for name in operator.OPERATOR_FILES:
                operator.operator_file(settings, environment, name)


def serve(settings: Settings, db_wait: float = DB_WAIT) -> None:
    from fourcorner.entrypoints.container import build_container, web_app
    from fourcorner.entrypoints.http import server

    preflight.data_dir(settings)
    _materials(settings)
    sock = preflight.listening_socket(settings)
    try:
        preflight.wait_for_database(settings, db_wait, say)
        container = build_container(settings)
        if settings.auth_mode == "local":
            # the signing key exists from the start, for `fourcorner token` to sign with
            container.token_authority().key_id()
        # a coroutine: serve awaits it inside its own loop
        app = web_app(container, workers=settings.workers)
        _started("serve", settings)
        try:
            asyncio.run(server.serve(app, sock=sock, hsts=settings.https))
        finally:
            _stopped("serve")
    finally:
        sock.close()


# never in the configuration summary: the at-rest key, and whatever names a secret
_SECRET = ("key", "secret", "password", "token")


def configuration_summary(settings: Settings) -> dict[str, Any]:
    """The settings an operator needs to read in the log, without a secret: the database
    URL as its address (no user, no password)."""
    summary: dict[str, Any] = {"database": _where(settings), "url": settings.base_url}
    for name, value in attrs.asdict(settings).items():
        if name == "database_url" or any(word in name for word in _SECRET):
            continue
        summary[name] = str(value) if isinstance(value, Path) else value
    return summary


def _started(role: str, settings: Settings) -> None:
    logging.getLogger("fourcorner").info(
        "serving" if role == "serve" else "workers started",
        extra={
            "event": "service.start",
            "role": role,
            "version": _version(),
            "storage": settings.storage_kind,
            "configuration": configuration_summary(settings),
        },
    )


def _stopped(role: str) -> None:
    logging.getLogger("fourcorner").info("stopped", extra={"event": "service.stop", "role": role})


def worker(settings: Settings, db_wait: float = DB_WAIT) -> None:
    from fourcorner.entrypoints.container import build_container, run_workers

    preflight.data_dir(settings)
    _materials(settings)
    preflight.wait_for_database(settings, db_wait, say)
    container = build_container(settings)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        _started("worker", settings)
        try:
            await run_workers(container, stop)
        finally:
            _stopped("worker")

    asyncio.run(main())


def migrate(settings: Settings, db_wait: float = DB_WAIT) -> str:
    """Apply the pending migrations; the line that says which (or that none were)."""
    where = _where(settings)
    if settings.storage_kind == "memory":
        return f"{where} keeps nothing between runs: there is nothing to migrate"
    from fourcorner.entrypoints.container import build_container

    preflight.data_dir(settings)
    preflight.wait_for_database(settings, db_wait, say)
    applied = asyncio.run(_migrate(build_container(settings)))
    if not applied:
        return f"{where} is up to date: no migration to apply"
    labels = ", ".join(m.label for m in applied)
    return f"applied {len(applied)} migration{'s' if len(applied) > 1 else ''} to {where}: {labels}"


async def _migrate(container: Any) -> list[Any]:
    """The schema's migrations (which were applied), then the data migrations, which need
    the application's ports (see ``container.migrate_data``)."""
    from fourcorner.entrypoints.container import migrate_data

    applied: list[Any] = await container.storage_adapter().migrate()
    await container.init_resources()
    try:
        await migrate_data(container)
    finally:
        await container.shutdown_resources()
    return applied


def _where(settings: Settings) -> str:
    if settings.storage_kind == "postgres":
        schema = settings.database_schema or "the default schema"
        return f"postgresql://{preflight.database_address(settings.database)} ({schema})"
    if settings.storage_kind == "sqlite":
        return f"sqlite:///{settings.sqlite_path}"
    return "memory://"


def token(settings: Settings, email: str, name: str, superadmin: bool, hours: float) -> str:
    if settings.auth_mode != "local":
        raise ConfigError(
            "tokens are minted only with FOURCORNER_AUTH_MODE=local; in oidc mode your "
            "identity provider issues them"
        )
    from fourcorner.entrypoints.container import build_container

    preflight.token_key(settings)
    container = build_container(settings)
    return str(
        container.token_authority().issue(
            email, name=name, superadmin=superadmin, ttl=timedelta(hours=hours)
        )
    )


def _hours(text: str) -> float:
    try:
        hours = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of hours") from None
    if not 0 < hours <= 24 * 366:
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and 8784 hours (a year)")
    return hours


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 <= seconds <= 3600:
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and 3600 seconds")
    return seconds


def _version() -> str:
    try:
        return version("fourcorner")
    except PackageNotFoundError:  # run from a source tree that was not installed
        return "unknown"


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog=PROG,
        description=textwrap.fill(
            "An open service for a four-corner e-invoicing network: the API, the built-in "
            "SMP, the AS4 access point and the workers, and the commands to run them.",
            88,
        ),
        epilog=CONFIGURATION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    top.add_argument("--version", action="version", version=f"{PROG} {_version()}")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, summary: str, description: str) -> argparse.ArgumentParser:
        return sub.add_parser(
            name,
            help=summary,
            description=textwrap.fill(description, 88),
            epilog=CONFIGURATION,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )

    def db_wait(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--db-wait",
            type=_seconds,
            default=DB_WAIT,
            metavar="SECONDS",
            help="how long to wait for PostgreSQL to accept connections before giving up "
            f"(default {DB_WAIT:g})",
        )

    db_wait(
        command(
            "serve",
            "serve the API, SMP and AS4 endpoints (and the workers)",
            "Serve the HTTP API, the built-in SMP and the AS4 endpoint on "
            "FOURCORNER_HOST:FOURCORNER_PORT, applying pending migrations first; unless "
            "FOURCORNER_WORKERS=false, the workers (webhook delivery, sending) run inside too.",
        )
    )
    db_wait(
        command(
            "worker",
            "run the workers only (webhook delivery, sending)",
            "Run the workers without the API: webhook delivery and sending documents to the "
            "network. Any number of workers can share one database.",
        )
    )
    db_wait(
        command(
            "migrate",
            "apply the database migrations and exit",
            "Apply the pending database migrations, say which were applied, and exit (the "
            "server also applies them when it starts).",
        )
    )
    tok = command(
        "token",
        "print a bearer token for the server on this data dir",
        "Print a bearer token signed with the key of the server on the same data dir "
        "(FOURCORNER_AUTH_MODE=local). The server creates that key when it first starts; "
        "without it this command refuses rather than make a key the server would not know.",
    )
    tok.add_argument("--email", required=True, help="the user's email address (required)")
    tok.add_argument("--name", default="", help="the user's display name")
    tok.add_argument("--superadmin", action="store_true", help="a superadmin token")
    tok.add_argument(
        "--hours", type=_hours, default=12.0, help="how long the token is valid (default 12)"
    )
    chk = command(
        "check",
        "verify the configuration, database, certificates and public URL",
        "Verify the configuration, the data dir, the database (reachable, migrations), the "
        "keys, the operator's certificates against the trust anchors, and the public URL; "
        "print a report and exit non-zero when something is wrong. It changes nothing.",
    )
    chk.add_argument(
        "--timeout",
        type=_seconds,
        default=5.0,
        metavar="SECONDS",
        help="how long to wait for the database and the public URL (default 5)",
    )
    har = command(
        "harness",
        "test a running service against the model (the property-based harness)",
        "Drive the HTTP API of a running service with the property-based state machine, "
        "checking every answer against the in-memory core; print each divergence as the "
        "shortest sequence of curl commands that shows it, and exit 1 if there is one "
        "(docs/harness.md). Needs the 'harness' extra (hypothesis).",
    )
    har.add_argument("--base-url", required=True, help="the service's URL")
    har.add_argument(
        "--token-command",
        required=True,
        help="prints a bearer token; {email} is replaced by the caller's email address and "
        "{superadmin} by --superadmin for a superadmin",
    )
    har.add_argument("--max-examples", type=int, default=25, metavar="N", help="(default 25)")
    har.add_argument("--seed", type=int, default=None, help="the same seed makes the same calls")
    har.add_argument("--namespace", default=None, help="tags the run's records (default random)")
    har.add_argument("--report", type=Path, default=None, metavar="FILE", help="a JUnit XML report")
    return top


def _explain(error: BaseException) -> str:
    """One line for an error raised while a command runs."""
    line = error.message() if isinstance(error, DomainError) else str(error)
    cause = error.__cause__
    if isinstance(cause, psycopg.Error):
        line = f"{line.rstrip('.')}: {preflight.database_reason(cause)}"
    return line


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "harness":
        try:
            from fourcorner.entrypoints.harness.cli import run_harness
        except ImportError as e:
            say(
                f"error: the harness needs the 'harness' extra ({e}): pip install 'fourcorner[harness]'"
            )
            return 2
        return run_harness(args)
    if args.command == "check":
        from fourcorner.entrypoints.check import run_check

        return run_check(say=print, timeout=args.timeout)
    try:
        settings = Settings.load()
    except ConfigError as e:
        say(f"error: {e}")
        return 2
    for line in unknown_environment(os.environ):
        say(f"warning: {line}")
    _logging(settings.log_level)
    os.umask(private.UMASK)  # before anything is written, by this process or its libraries
    try:
        preflight.data_dir(settings)
        private_files(settings)
        if args.command == "serve":
            serve(settings, args.db_wait)
        elif args.command == "worker":
            worker(settings, args.db_wait)
        elif args.command == "migrate":
            print(migrate(settings, args.db_wait))
        elif args.command == "token":
            print(token(settings, args.email, args.name, args.superadmin, args.hours))
    except ConfigError as e:
        say(f"error: {e}")
        return 2
    except StartupError as e:
        say(f"error: {e}")
        return e.status
    except DomainError as e:
        say(f"error: {_explain(e)}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
