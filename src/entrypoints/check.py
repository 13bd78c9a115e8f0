"""``fourcorner check``: verify a deployment's configuration and print a readable report.

Each line is a finding: ``ok``, ``warn`` (works, but look at it) or ``FAIL`` (the service will
not work as configured), with what was checked and what was found. The command changes
nothing: it creates no data dir, database, key or test PKI (it says when one does not exist
yet and the server will create it). It exits 1 when any line is ``FAIL``.
"""

from __future__ import annotations

import ipaddress
import os
import sqlite3
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import attrs
import psycopg
from cryptography import x509

from fourcorner.adapters.auth.local import KEY_FILE
from fourcorner.adapters.pki import load_test_pki
from fourcorner.adapters.pki.certificates import inspect_certificate
from fourcorner.adapters.sql import migrations
from fourcorner.domain.errors import InvalidInput
from fourcorner.entrypoints import operator, preflight
from fourcorner.entrypoints.config import ConfigError, Settings, unknown_environment
from fourcorner.entrypoints.preflight import StartupError
from fourcorner.entrypoints.setting_values import PREFIX

OK, WARN, FAIL = "ok", "warn", "FAIL"
EXPIRY_WARNING = timedelta(days=30)


@attrs.frozen
class Finding:
    level: str
    subject: str
    text: str


class Report:
    def __init__(self) -> None:
        self.findings: list[Finding] = []

    def add(self, level: str, subject: str, text: str) -> None:
        self.findings.append(Finding(level, subject, text))

    def lines(self) -> list[str]:
        width = max((len(f.subject) for f in self.findings), default=0)
        out = [f"{f.level:<4}  {f.subject:<{width}}  {f.text}" for f in self.findings]
        counts = {level: sum(f.level == level for f in self.findings) for level in (OK, WARN)}
        failed = sum(f.level == FAIL for f in self.findings)
        verdict = "fix the FAIL lines" if failed else "ready"
        out.append(
            f"{counts[OK]} ok, {counts[WARN]} warning{'s' * (counts[WARN] != 1)}, "
            f"{failed} failed: {verdict}"
        )
        return out

    @property
    def failed(self) -> bool:
        return any(f.level == FAIL for f in self.findings)


def run_check(
    say: Callable[[str], None], timeout: float, environ: dict[str, str] | None = None
) -> int:
    """Print the report with ``say``; 0 when nothing failed, else 1."""
    env = dict(os.environ if environ is None else environ)
    report = Report()
    settings = configuration(report, env)
    if settings is not None:
        data_dir(report, settings)
        database(report, settings, timeout)
        keys(report, settings)
        certificates(report, settings)
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


def database(report: Report, settings: Settings, timeout: float) -> None:
    kind = settings.storage_kind
    if kind == "memory":
        report.add(WARN, "database", "memory:// keeps nothing when the process stops")
        return
    if kind == "sqlite":
        path = Path(settings.sqlite_path)
        where = f"sqlite:///{path}"
        if not path.exists():
            report.add(WARN, "database", f"{where} does not exist yet; the server creates it")
            return
        try:
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=timeout) as conn:
                applied = _sqlite_versions(conn)
        except sqlite3.Error as e:
            report.add(FAIL, "database", f"{where} cannot be read: {e}")
            return
        _versions_state(report, where, applied, "sqlite")
        return
    where = f"postgresql://{preflight.database_address(settings.database)}"
    options = f"-c search_path={settings.database_schema}" if settings.database_schema else ""
    try:
        with psycopg.connect(
            settings.database, connect_timeout=max(1, int(timeout)), options=options
        ) as conn:
            row = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
            exists = bool(row and row[0])
            cursor = conn.execute("SELECT version FROM schema_migrations") if exists else None
            applied = {r[0] for r in cursor.fetchall()} if cursor else set()
    except psycopg.Error as e:
        report.add(
            FAIL,
            "database",
            f"{where} ({PREFIX}DATABASE_URL) cannot be used: {preflight.database_reason(e)}",
        )
        return
    _versions_state(report, where, applied, "postgres")


def _sqlite_versions(conn: sqlite3.Connection) -> set[int]:
    table = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
    ).fetchone()
    if table is None:
        return set()
    return {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}


def keys(report: Report, settings: Settings) -> None:
    if settings.auth_mode == "local":
        path = Path(settings.data_dir) / KEY_FILE
        if path.is_file():
            report.add(OK, "token key", f"{path} (local sign-in)")
        else:
            report.add(WARN, "token key", f"{path} does not exist yet; the server creates it")
    else:
        report.add(OK, "token key", f"oidc: tokens of {settings.oidc_issuer}")
    try:
        key_file = preflight.at_rest_key_file(settings)
    except StartupError as e:
        report.add(FAIL, "at-rest key", str(e))
        return
    if key_file is None:
        report.add(OK, "at-rest key", f"configured by {PREFIX}AT_REST_KEY")
    elif key_file.exists():
        report.add(OK, "at-rest key", f"{key_file}; back it up with the database")
    else:
        report.add(WARN, "at-rest key", f"{key_file} does not exist yet; the server creates it")


def _name(cert: x509.Certificate) -> str:
    return cert.subject.rfc4514_string()


def certificates(report: Report, settings: Settings) -> None:
    now = datetime.now(UTC)
    if settings.trust_anchors_file:
        try:
            anchors = operator.trust_anchors(settings)
        except ConfigError as e:
            report.add(FAIL, "trust anchors", str(e))
            return
        report.add(
            OK,
            "trust anchors",
            f"{settings.trust_anchors_file}: " + "; ".join(_name(c) for c in anchors),
        )
    else:
        pki_dir = Path(settings.data_dir) / "pki"
        if not pki_dir.is_dir():
            report.add(
                WARN,
                "trust anchors",
                f"none configured ({PREFIX}TRUST_ANCHORS_FILE) and no test PKI in {pki_dir} "
                "yet; the server creates a test PKI that only peers trusting it accept",
            )
            return
        anchors = load_test_pki(pki_dir).trust_anchors
        report.add(
            WARN,
            "trust anchors",
            f"the test PKI in {pki_dir} ({_name(anchors[0])}): only peers that trust it "
            f"accept this service; set {PREFIX}TRUST_ANCHORS_FILE for the network",
        )
    for anchor in anchors:
        _validity(report, "trust anchors", anchor, now)
    roots = [c for c in anchors if c.issuer == c.subject]
    if not settings.operator_certs_dir and not (Path(settings.data_dir) / "pki").is_dir():
        report.add(
            WARN,
            "certificates",
            f"none configured ({PREFIX}OPERATOR_CERTS_DIR) and no test PKI yet: the server "
            "creates test certificates that only peers trusting the test PKI accept",
        )
        return
    try:
        environments = operator.environments(settings)
    except ConfigError as e:
        report.add(FAIL, "certificates", str(e))
        return
    for env in environments:
        for role, cert, chain, key in (
            ("AP", env.ap_cert_pem, env.ap_chain_pem, env.ap_key_pem),
            ("SMP", env.smp_cert_pem, env.smp_chain_pem, env.smp_key_pem),
        ):
            subject = f"{env.environment.value} {role}"
            try:
                info = inspect_certificate(cert, chain, key, roots, now)
            except InvalidInput as e:
                why = "; ".join(d.problem for d in e.details())
                report.add(FAIL, subject, f"certificate does not pass: {why}")
                continue
            text = (
                f"{info.subject}: chains to the trust anchors, key matches, valid until "
                f"{info.valid_until:%Y-%m-%d}"
            )
            soon = info.valid_until - now < EXPIRY_WARNING
            report.add(WARN if soon else OK, subject, text + (" (renew it soon)" if soon else ""))


def _validity(report: Report, subject: str, cert: x509.Certificate, now: datetime) -> None:
    if cert.not_valid_after_utc < now:
        report.add(FAIL, subject, f"{_name(cert)} expired on {cert.not_valid_after_utc:%Y-%m-%d}")
    elif cert.not_valid_after_utc - now < EXPIRY_WARNING:
        report.add(WARN, subject, f"{_name(cert)} expires on {cert.not_valid_after_utc:%Y-%m-%d}")


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
