"""The command line of ``fourcorner``: its commands, their options and their help."""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

from fourcorner.entrypoints.commands.common import DB_WAIT, PROG, package_version

CONFIGURATION = """\
Settings come from FOURCORNER_* environment variables, or a TOML file named by
FOURCORNER_CONFIG_FILE (the same names, lower-cased, without the prefix); the environment
wins. docs/operations.md lists every setting; `fourcorner check` verifies them."""


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
    top.add_argument("--version", action="version", version=f"{PROG} {package_version()}")
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
            "FOURCORNER_WORKERS=false, the workers (webhook delivery, sending, the SML "
            "registrations, the blob sweep, the directory's retries) run inside too.",
        )
    )
    db_wait(
        command(
            "worker",
            "run the workers only (webhooks, sending, SML, blob sweep, directory retries)",
            "Run the workers without the API: webhook delivery, sending documents to the "
            "network, the SML registrations (our SMP and participants), the blob sweep "
            "(stored files no record names, left by a crash) and asking the directory again "
            "for business cards it did not take. Any number of workers can share one database.",
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
    db_wait(
        command(
            "reseal",
            "seal every stored secret again under the current at-rest key",
            "Seal every stored secret (private keys, webhook signing secrets, pending SML "
            "migration keys) again under FOURCORNER_AT_REST_KEY, opening those the previous "
            "key sealed with FOURCORNER_AT_REST_KEY_PREVIOUS; safe while serve and worker run. "
            "Say how many were sealed again and how many neither key opens (left as they are; "
            "then the exit status is 1). Run it again and it does nothing.",
        )
    )
    db_wait(
        command(
            "replace-operator-certificate",
            "store this data dir's operator certificates in place of others (another subject)",
            "Replace the operator's certificates stored in the database by the files this "
            "process reads (FOURCORNER_OPERATOR_CERTS_DIR, or the test PKI in the data dir's "
            "pki/), also when they are no renewal of the stored ones (another subject), which "
            "serve and worker refuse. Each file that differs must chain to the trust anchors, "
            "be valid now, match its key and have the key usages it needs, or nothing is "
            "replaced. Processes started afterwards with the older files are refused.",
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
        "verify the configuration, address, database, keys, certificates and public URL",
        "Verify the configuration, the data dir, the address to listen on, the database "
        "(reachable, migrations), the keys (the at-rest key opens the stored secrets), the "
        "operator's certificates against the trust anchors, and the public URL; print a "
        "report and exit non-zero when something is wrong. It changes nothing.",
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
