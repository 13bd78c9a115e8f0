"""``fourcorner check``: verify a deployment's configuration and print a readable report.

Each line is a finding: ``ok``, ``warn`` (works, but look at it) or ``FAIL`` (the service will
not work as configured), with what was checked and what was found. The command changes
nothing: it creates no data dir, database, key or test PKI (it says when one does not exist
yet and the server will create it). It exits 1 when any line is ``FAIL``, among them the
line that would stop the server because the database holds the operator's certificates and
the data dir has no copy of them, or other ones (``operator_guard``).
"""

from __future__ import annotations

import ipaddress
import os
import sqlite3
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import psycopg

from fourcorner.adapters.auth.local import KEY_FILE
from fourcorner.adapters.pki.sealing import KeySealer
from fourcorner.adapters.postgres.connection import connect_kwargs
from fourcorner.adapters.sql import migrations
from fourcorner.adapters.sql.dialect import POSTGRES, SQLITE, Dialect
from fourcorner.entrypoints import operator_guard, preflight, stored_secrets
from fourcorner.entrypoints.check_certificates import certificates
from fourcorner.entrypoints.check_report import FAIL, OK, WARN, Report
from fourcorner.entrypoints.config import ConfigError, Settings, unknown_environment
from fourcorner.entrypoints.preflight import StartupError
from fourcorner.entrypoints.setting_values import PREFIX
from fourcorner.entrypoints.stored_secrets import StoredSecrets


def run_check(
    say: Callable[[str], None], timeout: float, environ: dict[str, str] | None = None
) -> int:
    """Print the report with ``say``; 0 when nothing failed, else 1."""
    env = dict(os.environ if environ is None else environ)
    report = Report()
    settings = configuration(report, env)
    if settings is not None:
        data_dir(report, settings)
        listening(report, settings)
        held = database(report, settings, timeout)
        keys(report, settings, held.secret)
        certificates(report, settings, held.certificates)
        public_url(report, settings, timeout)
    for line in report.lines():
        say(line)
    return 1 if report.failed else 0


def configuration(report: Report, env: dict[str, str]) -> Settings | None:
    try:
        settings = Settings.read(env)
    except ConfigError as e:
        report.add(FAIL, "configuration", str(e))
        return None
    file = env.get(PREFIX + "CONFIG_FILE")
    origin = f"the environment and {file}" if file else "the environment"
    problems = settings.problems()
    for problem in problems:
        report.add(FAIL, "configuration", problem)
    for line in unknown_environment(env):
        report.add(WARN, "configuration", line)
    if not problems:
        report.add(OK, "configuration", f"settings read from {origin}")
        return settings
    return None


def data_dir(report: Report, settings: Settings) -> None:
    folder = Path(settings.data_dir)
    if not folder.exists():
        report.add(WARN, "data dir", f"{folder} does not exist yet; the server creates it")
        return
    try:
        preflight.data_dir(settings)
    except StartupError as e:
        report.add(FAIL, "data dir", str(e))
        return
    report.add(OK, "data dir", f"{folder.resolve()} is writable")


def _pending(applied: set[int], dialect: str) -> tuple[list[str], list[int]]:
    known = migrations.load(dialect)
    pending = [m.label for m in known if m.version not in applied]
    unknown = sorted(applied - {m.version for m in known})
    return pending, unknown


def _versions_state(report: Report, where: str, applied: set[int], dialect: str) -> None:
    pending, unknown = _pending(applied, dialect)
    if unknown:
        report.add(
            FAIL,
            "database",
            f"{where} has migrations this version does not know ({unknown}): it was migrated "
            "by a newer fourcorner; run that version, or restore a backup",
        )
    elif pending:
        report.add(
            WARN,
            "database",
            f"{where}: {len(pending)} migration(s) pending ({', '.join(pending)}); the server "
            "applies them at start, or run fourcorner migrate",
        )
    else:
        report.add(OK, "database", f"{where}: reachable, {len(applied)} migration(s) applied")


def listening(report: Report, settings: Settings) -> None:
    """The server can listen on ``FOURCORNER_HOST:FOURCORNER_PORT`` (``preflight``'s own
    socket, bound and closed again): a host that is no address of this machine fails, a port
    another program listens on is a warning (it may be the running server)."""
    where = f"{settings.host}:{settings.port}"
    try:
        preflight.listening_socket(settings).close()
    except preflight.AddressInUse:
        report.add(
            WARN,
            "listen",
            f"{where} is in use by another program: the server's own, if it runs; else stop "
            f"that program, or set {PREFIX}PORT to a free port",
        )
    except StartupError as e:
        report.add(FAIL, "listen", str(e))
    else:
        report.add(OK, "listen", f"{where} is free to listen on")


@attrs.frozen
class Held:
    """What the database holds that the other checks look at, read on ``database``'s one
    connection: the secrets (for ``keys``) and the operator's certificates' stored records (for
    ``certificates``)."""

    secret: StoredSecrets | None = None
    certificates: tuple[str, ...] = ()


def database(report: Report, settings: Settings, timeout: float) -> Held:
    """The database's migration state, and what it holds for the other checks (``Held``)."""
    kind = settings.storage_kind
    if kind == "memory":
        report.add(WARN, "database", "memory:// keeps nothing when the process stops")
        return Held()
    if kind == "sqlite":
        path = Path(settings.sqlite_path)
        where = f"sqlite:///{path}"
        if not path.exists():
            report.add(WARN, "database", f"{where} does not exist yet; the server creates it")
            return Held()
        try:
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=timeout) as conn:
                applied = _sqlite_versions(conn)
                held = _held(report, applied, SQLITE, lambda q, p: conn.execute(q, p).fetchall())
        except sqlite3.Error as e:
            report.add(FAIL, "database", f"{where} cannot be read: {e}")
            return Held()
        _versions_state(report, where, applied, "sqlite")
        return held
    where = f"postgresql://{preflight.database_address(settings.database)}"
    kwargs = connect_kwargs(settings.database_schema or None)
    try:
        with psycopg.connect(
            settings.database, connect_timeout=max(1, int(timeout)), **kwargs
        ) as pg:
            pg.read_only = True
            row = pg.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
            exists = bool(row and row[0])
            cursor = pg.execute("SELECT version FROM schema_migrations") if exists else None
            applied = {r[0] for r in cursor.fetchall()} if cursor else set()
            # autocommit (connect_kwargs): a statement that fails leaves the next ones readable
            held = _held(report, applied, POSTGRES, lambda q, p: pg.execute(q, p).fetchall())
    except psycopg.Error as e:
        report.add(
            FAIL,
            "database",
            f"{where} ({PREFIX}DATABASE_URL) cannot be used: {preflight.database_reason(e)}",
        )
        return Held()
    _versions_state(report, where, applied, "postgres")
    return held


def _held(
    report: Report,
    applied: set[int],
    dialect: Dialect,
    fetch: Callable[[str, Sequence[Any]], Any],
) -> Held:
    """What the database holds for the other checks, read on its open connection by
    ``fetch`` (the rows of a statement), nothing before the tables; a read that fails is said
    on its own line."""
    if not applied:
        return Held()
    try:
        texts = tuple(operator_guard.certificate_texts(fetch, dialect))
    except (sqlite3.Error, psycopg.Error) as e:
        texts = ()
        report.add(
            WARN,
            "certificates",
            f"the operator's stored certificates cannot be read: {_first_line(e)}",
        )
    try:
        return Held(stored_secrets.every(fetch, dialect), texts)
    except (sqlite3.Error, psycopg.Error, ValueError) as e:
        report.add(WARN, "stored secrets", f"not checked against the at-rest key: {_first_line(e)}")
        return Held(None, texts)


def _first_line(error: Exception) -> str:
    """What a driver's error says, on one line (PostgreSQL's add ``LINE 1: ...`` below)."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _sqlite_versions(conn: sqlite3.Connection) -> set[int]:
    table = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
    ).fetchone()
    if table is None:
        return set()
    return {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}


def keys(report: Report, settings: Settings, stored: StoredSecrets | None = None) -> None:
    """The token key, the at-rest key, and whether that key opens ``stored`` (a secret the
    database holds)."""
    if settings.auth_mode == "local":
        path = Path(settings.data_dir) / KEY_FILE
        if path.is_file():
            report.add(OK, "token key", f"{path} (local sign-in)")
        else:
            report.add(WARN, "token key", f"{path} does not exist yet; the server creates it")
    else:
        report.add(OK, "token key", f"oidc: tokens of {settings.oidc_issuer}")
    at_rest(report, settings, stored)


def at_rest(report: Report, settings: Settings, stored: StoredSecrets | None) -> None:
    """The at-rest key, as the server loads it, and whether it opens ``stored``."""
    try:
        key_file = preflight.at_rest_key_file(settings)
    except StartupError as e:
        report.add(FAIL, "at-rest key", str(e))
        return
    if key_file is not None and not key_file.exists():
        # the server makes a new key: fine for a new database, fatal for one with secrets
        report.add(
            *(WARN, "at-rest key", f"{key_file} does not exist yet; the server creates it")
            if stored is None
            else (
                FAIL,
                "at-rest key",
                f"none: {key_file} does not exist and {PREFIX}AT_REST_KEY is unset, but the "
                f"database holds secrets sealed under one ({stored.name}); a new key would "
                f"open none of them: restore {key_file} from the backup, or set "
                f"{PREFIX}AT_REST_KEY to the key in use",
            )
        )
        return
    where = f"configured by {PREFIX}AT_REST_KEY" if key_file is None else str(key_file)
    report.add(
        OK, "at-rest key", where + ("" if key_file is None else "; back it up with the database")
    )
    if stored is None:
        return
    opened_by(report, settings, stored, where, key_file)


def opened_by(
    report: Report, settings: Settings, stored: StoredSecrets, where: str, key_file: Path | None
) -> None:
    """Which key opens each stored secret: FAIL for those neither the at-rest key nor
    ``FOURCORNER_AT_REST_KEY_PREVIOUS`` opens, WARN for those only the previous key opens
    (to be sealed again before it is dropped), else ok."""
    # the server's own loading: the configured keys decoded, or the existing file read
    sealer = KeySealer.from_config(
        settings.at_rest_key, settings.data_dir, settings.at_rest_key_previous
    )
    found = stored.keys(sealer)
    nor = f" or with {PREFIX}AT_REST_KEY_PREVIOUS" if settings.at_rest_key_previous.strip() else ""
    if found.unopened:
        (secret, problem), others = found.unopened[0], len(found.unopened) - 1
        report.add(
            FAIL,
            "stored secrets",
            f"{secret.name} does not open with the at-rest key {where}{nor} ({problem})"
            + (f", nor do {others} other stored secret(s)" if others else "")
            + f"; set {PREFIX}AT_REST_KEY (or {key_file or 'keys/at-rest.key'}) to the key "
            "that sealed the database's secrets",
        )
    if found.previous:
        report.add(
            WARN,
            "stored secrets",
            f"{len(found.previous)} stored secret(s) open only with {PREFIX}AT_REST_KEY_PREVIOUS "
            f"({found.previous[0].name} among them); run fourcorner reseal before removing it",
        )
    if found.current == len(stored.secrets):
        others = found.current - 1
        report.add(
            OK,
            "stored secrets",
            f"the at-rest key opens {stored.name}"
            + (f" and the {others} other stored secret(s)" if others else ""),
        )


def public_url(report: Report, settings: Settings, timeout: float) -> None:
    base = settings.base_url
    host = (urllib.parse.urlsplit(base).hostname or "").strip("[]")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if host == "localhost" or (address is not None and address.is_loopback):
        report.add(
            WARN,
            "public URL",
            f"{base} is a loopback address: other access points cannot reach this one; set "
            f"{PREFIX}PUBLIC_URL to the address peers use",
        )
    elif address is not None and address.is_private:
        report.add(
            WARN, "public URL", f"{base} is a private address: peers outside cannot reach it"
        )
    try:
        with urllib.request.urlopen(f"{base}/healthz", timeout=timeout) as answer:  # noqa: S310
            status = answer.status
    except (urllib.error.URLError, OSError, ValueError) as e:
        why = getattr(e, "reason", e)
        report.add(
            WARN,
            "public URL",
            f"{base}/healthz does not answer ({why}); is the server running, and does the URL "
            "lead to it?",
        )
        return
    level = OK if status == 200 else WARN
    report.add(level, "public URL", f"{base}/healthz answers {status}")
