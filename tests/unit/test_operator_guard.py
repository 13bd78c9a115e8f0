"""The operator's certificates a process starts with, against those its database holds, with
certificates of the network (``FOURCORNER_OPERATOR_CERTS_DIR``) and on SQLite, whose file
two data dirs may name: going live replaces the test PKI's, a renewal replaces the stored
one, older files refuse with what to copy, and a data dir without the setting refuses instead
of making a test PKI. (PostgreSQL: ``tests/contract/http/test_shared_certificates.py``.)"""

from __future__ import annotations

import shutil
import sqlite3
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from fourcorner.adapters.pki import cert_pem, ensure_test_pki, issue_leaf, key_pem, new_ca
from fourcorner.domain.certificates import Service
from fourcorner.domain.network_services import Environment
from fourcorner.entrypoints import operator
from fourcorner.entrypoints.check import run_check
from fourcorner.entrypoints.config import Settings
from fourcorner.entrypoints.container import build_container, settle, web_app
from fourcorner.entrypoints.operator_guard import stored_certificates
from fourcorner.entrypoints.preflight import StartupError

SEAT = "PFC000001"


def network_certificates(folder: Path, root: Any, root_key: Any, start: datetime) -> None:
    """``test/`` and ``prod/`` of an operator's certificates folder, of the network's CAs
    under ``root``, valid from ``start``."""
    ca, ca_key = new_ca("Network CA", issuer_cert=root, issuer_key=root_key)
    for environment in ("test", "prod"):
        place = folder / environment
        place.mkdir(parents=True)
        for role, cn in (("ap", SEAT), ("smp", "SMP of the operator")):
            end = start + timedelta(days=365)
            cert, key = issue_leaf(ca, ca_key, cn, not_before=start, not_after=end)
            (place / f"{role}.pem").write_text(cert_pem(cert))
            (place / f"{role}.key").write_text(key_pem(key))
            (place / f"{role}-chain.pem").write_text(cert_pem(ca) + cert_pem(root))


def settings(data_dir: Path, db: Path, **extra: Any) -> Settings:
    return Settings(data_dir=data_dir, database_url=f"sqlite:///{db}", **extra).check()


async def start(config: Settings) -> None:
    container = build_container(config)
    await web_app(container)
    await settle(container.shutdown_resources())


async def refused(config: Settings) -> str:
    container = build_container(config)
    with pytest.raises(StartupError) as refusal:
        await web_app(container)
    await settle(container.shutdown_resources())
    return str(refusal.value)


def stored_ap(config: Settings) -> str:
    return stored_certificates(config)[Environment.TEST, Service.AP].cert_pem


async def test_network_certificates_replace_the_test_pkis_and_then_only_by_renewal(
    tmp_path: Path,
) -> None:
    db = tmp_path / "shared.db"
    first = tmp_path / "first"
    ensure_test_pki(first, seat_id=SEAT)
    await start(settings(first, db))
    assert stored_ap(settings(first, db)) == (first / "pki" / "ap.pem").read_text()

    # going live: the network's certificates take the test PKI's place
    root, root_key = new_ca("Network Root")
    anchors = tmp_path / "anchors.pem"
    anchors.write_text(cert_pem(root))
    now = datetime.now(UTC)
    current, older = tmp_path / "current", tmp_path / "older"
    network_certificates(older, root, root_key, now - timedelta(days=2))
    network_certificates(current, root, root_key, now - timedelta(days=1))
    live = {"trust_anchors_file": str(anchors), "operator_certs_dir": str(current)}
    await start(settings(first, db, **live))
    assert stored_ap(settings(first, db)) == (current / "test" / "ap.pem").read_text()

    # a process restarted with the certificates from before: refused, what to copy named
    stale = {**live, "operator_certs_dir": str(older)}
    line = await refused(settings(tmp_path / "second", db, **stale))
    assert str(older / "test" / "ap.pem") in line and "not newer" in line, line
    assert "copy the current files of FOURCORNER_OPERATOR_CERTS_DIR" in line, line
    assert stored_ap(settings(first, db)) == (current / "test" / "ap.pem").read_text()

    # a process without the setting, on a data dir of its own: no test PKI is made
    line = await refused(settings(tmp_path / "third", db))
    assert f"({tmp_path / 'third' / 'pki'} does not exist)" in line, line
    assert "set FOURCORNER_OPERATOR_CERTS_DIR as on the other processes" in line, line
    assert not (tmp_path / "third" / "pki").exists()
    # nor with the test PKI it kept from before going live
    shutil.copytree(first / "pki", tmp_path / "third" / "pki")
    line = await refused(settings(tmp_path / "third", db))
    assert "set FOURCORNER_OPERATOR_CERTS_DIR as on the other processes" in line, line
    assert stored_ap(settings(first, db)) == (current / "test" / "ap.pem").read_text()

    # the same files on another data dir start
    await start(settings(tmp_path / "fourth", db, **live))


async def test_a_damaged_stored_certificate_is_a_line_not_a_traceback(tmp_path: Path) -> None:
    """A stored operator certificate that is no certificate's record (a damaged row) stops
    the next process with one line saying so, and ``fourcorner check`` reports it as FAIL."""
    db = tmp_path / "shared.db"
    config = settings(tmp_path / "first", db)
    await start(config)
    with sqlite3.connect(db) as conn:
        assert conn.execute("UPDATE certificates SET data = '{\"id\": 1}'").rowcount > 0
    line = await refused(config)
    assert line.startswith("a stored operator certificate cannot be read"), line
    said: list[str] = []
    env = {
        "FOURCORNER_DATA_DIR": str(tmp_path / "first"),
        "FOURCORNER_DATABASE_URL": f"sqlite:///{db}",
    }
    assert run_check(said.append, 3, env) == 1
    assert any(
        s.startswith("FAIL") and "a stored operator certificate cannot be read" in s for s in said
    ), said


async def test_a_start_reads_each_certificate_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A start reads each of the operator's files once, on a new database and on a restart
    (the guard, the SML, the directory over https and the stored records share that reading),
    and stores the certificates as before."""
    root, root_key = new_ca("Network Root")
    anchors = tmp_path / "anchors.pem"
    anchors.write_text(cert_pem(root))
    certs = tmp_path / "certs"
    network_certificates(certs, root, root_key, datetime.now(UTC) - timedelta(days=1))
    live = {
        "trust_anchors_file": str(anchors),
        "operator_certs_dir": str(certs),
        "directory_url_test": "https://directory.example/indexer/1.0/",
    }
    reads: Counter[tuple[str, str]] = Counter()
    real = operator.operator_file

    def counted(config: Settings, environment: str, name: str) -> str:
        reads[environment, name] += 1
        return real(config, environment, name)

    monkeypatch.setattr(operator, "operator_file", counted)
    once = Counter({(e, name): 1 for e in ("test", "prod") for name in operator.OPERATOR_FILES})
    config = settings(tmp_path / "data", tmp_path / "shared.db", **live)
    for _ in ("a new database", "a restart on it"):
        reads.clear()
        await start(config)
        assert reads == once
    assert stored_ap(config) == (certs / "test" / "ap.pem").read_text()
