"""The operator's certificates a process starts with, held against those its database stores.

Every ``fourcorner serve`` stores the operator's certificates at start from its own files
(``FOURCORNER_OPERATOR_CERTS_DIR``, or the test PKI in ``<data dir>/pki``, which it creates
when it finds none). On a database shared by several processes, a process whose files are
missing or other than those stored would replace the certificates the others sign with, and
their sends would fail until they restart. So before anything creates a test PKI,
``fourcorner serve`` and ``fourcorner worker`` read the stored certificates and refuse to
start, in one line naming the file and what to do, when this data dir has no copy of them or
holds files that may not replace them (``adapters.pki.renewal``); ``fourcorner check``
reports the same line as a failure. An empty database is the first start: a server makes the
files and stores them then, while a worker stores nothing and waits for them
(``container.operator_stored``). ``operator_setup.ensure_operator`` decides again, on the
stored records it holds, for processes that start at the same moment. Only
``fourcorner replace-operator-certificate`` stores files that are no successor of the stored
ones (``entrypoints.commands.replace``).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path

import psycopg
from cryptography import x509

from fourcorner.adapters.pki.renewal import ANOTHER_SUBJECT, replacement_problem
from fourcorner.adapters.pki.testpki import PKI_DIR, PKI_FILES, issued_by_test_ca
from fourcorner.adapters.postgres.connection import connect_kwargs
from fourcorner.adapters.sql.codec import UNREADABLE, make_converter
from fourcorner.adapters.sql.dialect import POSTGRES, SQLITE, Dialect
from fourcorner.application.operator_setup import (
    CertificateKept,
    OperatorEnvironment,
    SeatChanged,
    certificate_id,
)
from fourcorner.domain.certificates import Certificate, Service
from fourcorner.domain.network_services import Environment
from fourcorner.entrypoints import operator, preflight
from fourcorner.entrypoints.config import Settings
from fourcorner.entrypoints.preflight import StartupError
from fourcorner.entrypoints.setting_values import PREFIX
from fourcorner.entrypoints.stored_secrets import Fetch

TIMEOUT = 10.0  # seconds to connect to the database, which answered a moment ago
SEVERAL = 'docs/operations.md, "Several processes"'
RENEWAL = 'docs/operations.md, "Certificates and trust anchors"'
REPLACING = 'docs/operations.md, "Replacing an operator certificate"'
NOT_CONFIGURED = (
    f"the stored certificates are not a test PKI's: set {PREFIX}OPERATOR_CERTS_DIR as on the "
    "other processes"
)

Stored = dict[tuple[Environment, Service], Certificate]
Environments = Callable[[], list[OperatorEnvironment]]


def _texts(settings: Settings, timeout: float) -> list[str]:
    """The stored records (JSON text) of the operator's certificates; none before the
    database has its tables."""
    if settings.storage_kind == "postgres":
        kwargs = connect_kwargs(settings.database_schema or None)
        with psycopg.connect(
            settings.database, connect_timeout=max(1, int(timeout)), **kwargs
        ) as conn:
            return certificate_texts(lambda sql, p: conn.execute(sql, p).fetchall(), POSTGRES)
    path = Path(settings.sqlite_path) if settings.storage_kind == "sqlite" else None
    if path is None or not path.exists():
        return []
    uri = f"file:{path}?mode=ro"
    with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=timeout)) as conn:
        return certificate_texts(lambda sql, p: conn.execute(sql, p).fetchall(), SQLITE)


def certificate_texts(fetch: Fetch, dialect: Dialect) -> list[str]:
    """The stored records (JSON text) of the operator's certificates, read with ``fetch``
    (SQL text of ``dialect``, parameters -> rows) on a connection open already; none before
    the database has its tables."""
    ids = [str(certificate_id(s, e)) for e in Environment for s in Service]
    if dialect is POSTGRES:
        [(exists,)] = fetch("SELECT to_regclass('certificates') IS NOT NULL", ())
        if not exists:
            return []
        # id::text: the column is text before migration 0014, uuid after
        query = "SELECT data FROM certificates WHERE id::text = ANY(%s)"
        return [r[0] for r in fetch(query, (ids,))]
    table = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'certificates'"
    if not fetch(table, ()):
        return []
    marks = ", ".join("?" * len(ids))
    query = f"SELECT data FROM certificates WHERE id IN ({marks})"  # noqa: S608
    return [r[0] for r in fetch(query, ids)]


def stored_certificates(settings: Settings, timeout: float = TIMEOUT) -> Stored:
    """The operator's certificates the database holds, by environment and service; the
    driver's error (``psycopg.Error``, ``sqlite3.Error``) when it cannot be read, and
    ``ValueError`` when a stored record is not a certificate's."""
    return decoded(_texts(settings, timeout))


def decoded(texts: Iterable[str]) -> Stored:
    """The operator's certificates of their stored records (``certificate_texts``), by
    environment and service; ``ValueError`` when a record is not a certificate's."""
    converter = make_converter()
    out: Stored = {}
    for text in texts:
        try:
            cert = converter.loads(text, Certificate)
        except UNREADABLE as e:
            raise ValueError(f"a stored operator certificate cannot be read ({e})") from None
        out[cert.environment.environment, cert.service] = cert
    return out


def local_file(settings: Settings, environment: Environment, service: Service) -> Path:
    """The file this process stores as the operator's ``service`` certificate of
    ``environment``."""
    name = "ap.pem" if service is Service.AP else "smp.pem"
    if settings.operator_certs_dir:
        return Path(settings.operator_certs_dir) / environment.value.lower() / name
    return Path(settings.data_dir) / PKI_DIR / name


def _of_test_pki(cert: Certificate) -> bool:
    try:
        return issued_by_test_ca(x509.load_pem_x509_certificate(cert.cert_pem.encode()))
    except ValueError:
        return False


def kept_line(settings: Settings, kept: CertificateKept) -> str:
    """The line that refuses a start whose file may not replace the stored certificate."""
    if settings.operator_certs_dir:
        do = f"copy the current files of {PREFIX}OPERATOR_CERTS_DIR from one of them"
    elif _of_test_pki(kept.stored):
        do = "copy the current pki/ and keys/ from one of them"
    else:
        do = NOT_CONFIGURED
    line = (
        f"the database holds the operator's {kept.environment.value} {kept.service.value} "
        f'certificate "{kept.stored.subject}", which '
        f"{local_file(settings, kept.environment, kept.service)} may not replace: "
        f"{kept.problem}. This data dir has other or older files than the processes running: "
        f"{do}; to renew, give every process the renewed files ({RENEWAL})"
    )
    if kept.problem.startswith(ANOTHER_SUBJECT):
        line += (
            "; to put a certificate of another subject in its place on purpose, run fourcorner "
            f"replace-operator-certificate with the new files ({REPLACING})"
        )
    return line


def seat_line(settings: Settings, changed: SeatChanged) -> str:
    """The line that refuses a start (or a replacement) with another seat id than the one
    the database's operator has."""
    return (
        f"{PREFIX}SEAT_ID is {settings.seat_id}, but the database's operator receives message "
        f"level statuses as {changed.held} ({changed.environment.value}), another seat's: a "
        f"provider keeps its seat id, and this one is not moved to another; set "
        f"{PREFIX}SEAT_ID to the operator's seat id, and keep AP certificates of that seat"
    )


def _missing_line(settings: Settings, missing: Path, stored: Stored) -> str:
    if any(_of_test_pki(c) for c in stored.values()):
        do = f"copy pki/ and keys/ from the data dir of the first process ({SEVERAL})"
    else:
        do = f"{NOT_CONFIGURED}, and copy keys/ from the first one ({SEVERAL})"
    return (
        f"the database holds the operator's certificates, but this data dir has no copy of "
        f"them ({missing} does not exist): {do}; a new test PKI here would replace the "
        "certificates the other processes sign with"
    )


def missing_file(settings: Settings) -> Path | None:
    """Without ``FOURCORNER_OPERATOR_CERTS_DIR``, the first file of this data dir's test PKI
    that does not exist (``pki/`` itself when it does not); None when they all do, and with
    that setting. Nothing is created."""
    if settings.operator_certs_dir:
        return None
    folder = Path(settings.data_dir) / PKI_DIR
    if not folder.is_dir():
        return folder
    return next((f for f in (folder / name for name in PKI_FILES) if not f.is_file()), None)


def refusal(settings: Settings, stored: Stored, files: Environments | None = None) -> str | None:
    """Why this process may not start on a database holding ``stored``, in one line; None
    when its files are those stored, or their successors. It creates no test PKI: one is
    loaded only when every file of it is there. ``files``: what reads this process's files
    (the container's ``operator_environments``, which the start then uses as read here)."""
    if not stored:
        return None  # the first start: the files are made (a test PKI) and stored
    missing = missing_file(settings)
    if missing is not None:
        return _missing_line(settings, missing, stored)
    own_files = files() if files is not None else operator.environments(settings)
    environments = {e.environment: e for e in own_files}
    anchors = operator.trust_anchors(settings)
    for (environment, service), cert in sorted(stored.items(), key=_order):
        own = environments[environment]
        pem = own.ap_cert_pem if service is Service.AP else own.smp_cert_pem
        if pem == cert.cert_pem:
            continue
        problem = replacement_problem(cert.cert_pem, cert.ca_chain_pem, pem, anchors)
        if problem is not None:
            return kept_line(settings, CertificateKept(environment, service, cert, problem))
    return None


def _order(item: tuple[tuple[Environment, Service], Certificate]) -> tuple[int, int]:
    (environment, service), _ = item
    return list(Environment).index(environment), list(Service).index(service)


# the drivers' errors of a database that cannot be read (now: it may restart)
READ_ERRORS = (psycopg.Error, sqlite3.Error)


def read_problem(settings: Settings, error: Exception) -> str:
    """The line that says the database cannot be read (``error``, one of ``READ_ERRORS``)."""
    if isinstance(error, psycopg.Error):
        return (
            f"the database {preflight.database_address(settings.database)} "
            f"({PREFIX}DATABASE_URL) cannot be read: {preflight.database_reason(error)}"
        )
    return f"the database {settings.sqlite_path} ({PREFIX}DATABASE_URL) cannot be read: {error}"


def read(settings: Settings) -> Stored:
    """The operator's certificates the database holds (``stored_certificates``);
    ``StartupError`` in one line when they cannot be read."""
    try:
        stored = stored_certificates(settings)
    except READ_ERRORS as e:
        raise StartupError(read_problem(settings, e)) from None
    except ValueError as e:
        raise StartupError(str(e)) from None
    return stored


def check(settings: Settings, files: Environments | None = None) -> Stored:
    """The operator's certificates the database holds; ``StartupError`` when they cannot be
    read (``read``), or this process may not start on them (``refusal``, its files read by
    ``files``)."""
    stored = read(settings)
    line = refusal(settings, stored, files)
    if line is not None:
        raise StartupError(line)
    return stored
