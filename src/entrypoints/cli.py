"""``fourcorner``: serve, worker, migrate, reseal, replace-operator-certificate, token, check,
harness.

A problem that stops a command (a setting that cannot be used, a port in use, a database that
does not answer, a data dir that cannot be written) is printed as one line,
``fourcorner: error: <what is wrong, which setting, what to do>``, and the command exits with
status 2 (the configuration or the command line) or 1 (the machine or a service), without a
traceback. ``FOURCORNER_`` variables that are not settings are named in a warning line.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence

import psycopg

from fourcorner.adapters import private
from fourcorner.domain.errors import DomainError
from fourcorner.entrypoints import preflight
from fourcorner.entrypoints.commands.common import say
from fourcorner.entrypoints.commands.migrate import migrate
from fourcorner.entrypoints.commands.parser import parser
from fourcorner.entrypoints.commands.reseal import reseal
from fourcorner.entrypoints.commands.serve import serve, worker
from fourcorner.entrypoints.commands.token import token
from fourcorner.entrypoints.config import ConfigError, Settings, unknown_environment
from fourcorner.entrypoints.preflight import StartupError
from fourcorner.entrypoints.private_files import private_files

# The server's modules (aiohttp, the container and every adapter) are imported by the commands
# that need them, so that `--help`, `--version` and refusals answer at once.


def _logging(level: str) -> None:
    from fourcorner.entrypoints.http.app import json_log_formatter

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(json_log_formatter())
    handler.setLevel(level.upper())  # the events logger passes INFO on for the metrics
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)


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
        elif args.command == "reseal":
            return reseal(settings, args.db_wait)
        elif args.command == "replace-operator-certificate":
            from fourcorner.entrypoints.commands.replace import replace_operator_certificates

            print("\n".join(replace_operator_certificates(settings, args.db_wait)))
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
