"""``fourcorner check`` as a subprocess: a fresh data dir (warnings, nothing created), a running
server (every line ok but the loopback public URL), certificates that do not chain to the
trust anchors or have expired (FAIL, exit 1), every configuration problem listed, the
migration state of a PostgreSQL schema before and after ``fourcorner migrate``, and a data dir
without the certificates a first process stored (FAIL; serve and worker refuse)."""

from __future__ import annotations

import asyncio
import re
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import pg
from fourcorner.adapters.pki import cert_pem, issue_leaf, key_pem, new_ca
from fourcorner.entrypoints.config import Settings
from fourcorner.entrypoints.container import build_container, settle, web_app

from .test_serve import Server, free_port
from .test_startup import refused, run

pytestmark = pytest.mark.slow


def lines(stdout: str, level: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith(level)]


def test_a_fresh_data_dir_gives_warnings_and_is_left_as_it_was(tmp_path):
    data = tmp_path / "var"
    proc = run(data, "check", "--timeout", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert lines(proc.stdout, "FAIL") == []
    for subject in ("data dir", "database", "token key", "at-rest key", "trust anchors"):
        assert any(subject in line and " yet" in line for line in lines(proc.stdout, "warn"))
    assert re.search(r"^ok\s+listen\s+127\.0\.0\.1:\d+ is free to listen on$", proc.stdout, re.M)
    assert re.search(r"^2 ok, \d+ warnings, 0 failed: ready$", proc.stdout, re.M), proc.stdout
    assert not data.exists()  # it created nothing


def test_a_running_server_checks_out(tmp_path):
    server = Server(tmp_path, free_port())
    server.start()
    try:
        proc = run(tmp_path, "check", port=server.base.rsplit(":", 1)[1])
    finally:
        server.stop()
    assert proc.returncode == 0, proc.stdout
    ok = "\n".join(lines(proc.stdout, "ok"))
    assert re.search(r"database\s+sqlite:///.*: reachable, \d+ migration\(s\) applied", ok), ok
    for subject in ("TEST AP", "TEST SMP", "PROD AP", "PROD SMP"):
        assert re.search(rf"{subject}\s+CN=.*chains to the trust anchors, key matches", ok), ok
    assert re.search(r"public URL\s+http://127\.0\.0\.1:\d+/healthz answers 200", ok), ok
    assert "token key" in ok and "at-rest key" in ok
    (warned,) = [w for w in lines(proc.stdout, "warn") if "public URL" in w]
    assert "loopback" in warned
    (listen,) = [w for w in lines(proc.stdout, "warn") if re.match(r"warn\s+listen", w)]
    assert "in use by another program: the server's own, if it runs" in listen
    assert re.search(r"^ok\s+stored secrets\s+the at-rest key opens the private key", ok, re.M)


def _write_environment(folder: Path, root: Any, root_key: Any, *, ap_expired: bool) -> None:
    """``ap.pem``, ``smp.pem``, their keys and chains, issued by an intermediate of ``root``."""
    now = datetime.now(UTC)
    ca, ca_key = new_ca("Operator CA", issuer_cert=root, issuer_key=root_key)
    folder.mkdir(parents=True)
    for role in ("ap", "smp"):
        expired = ap_expired and role == "ap"
        start, end = (
            (now - timedelta(days=30), now - timedelta(days=1))
            if expired
            else (
                now - timedelta(hours=1),
                now + timedelta(days=365),
            )
        )
        name = f"{role.upper()} {folder.name}"
        cert, key = issue_leaf(ca, ca_key, name, not_before=start, not_after=end)
        (folder / f"{role}.pem").write_text(cert_pem(cert))
        (folder / f"{role}.key").write_text(key_pem(key))
        (folder / f"{role}-chain.pem").write_text(cert_pem(ca) + cert_pem(root))


def test_certificates_are_checked_against_the_trust_anchors(tmp_path):
    root, root_key = new_ca("Network Root")
    stranger, stranger_key = new_ca("Some Other Root")
    anchors = tmp_path / "anchors.pem"
    anchors.write_text(cert_pem(root))
    certs = tmp_path / "certs"
    _write_environment(certs / "test", root, root_key, ap_expired=False)
    _write_environment(certs / "prod", stranger, stranger_key, ap_expired=True)
    settings = {"trust_anchors_file": str(anchors), "operator_certs_dir": str(certs)}
    proc = run(tmp_path / "var", "check", "--timeout", "1", **settings)
    assert proc.returncode == 1, proc.stdout
    assert re.search(r"^ok\s+trust anchors\s+.*CN=Network Root", proc.stdout, re.M)
    assert re.search(
        r"^ok\s+TEST AP\s+CN=AP test\S*: chains to the trust anchors", proc.stdout, re.M
    )
    failed = "\n".join(lines(proc.stdout, "FAIL"))
    assert re.search(r"PROD AP .*expired", failed), failed
    assert re.search(r"PROD SMP .*(trust anchor|chain)", failed), failed
    assert proc.stdout.rstrip().endswith("failed: fix the FAIL lines")
    # a file missing from the folder stops the server at start, naming it
    (certs / "test" / "smp.key").unlink()
    refused(run(tmp_path / "var", "serve", **settings), 2, str(certs / "test" / "smp.key"))
    anchors.write_text("not a certificate\n")
    refused(
        run(tmp_path / "var", "serve", **settings),
        2,
        "FOURCORNER_TRUST_ANCHORS_FILE",
        "holds no PEM certificate",
    )


def test_every_configuration_problem_is_listed(tmp_path):
    proc = run(tmp_path, "check", port="0", log_level="loud", smp_prefix="smp")
    assert proc.returncode == 1
    failed = lines(proc.stdout, "FAIL")
    assert [re.split(r"[= ]", line.split("configuration", 1)[1].strip())[0] for line in failed] == [
        "FOURCORNER_SMP_PREFIX",
        "FOURCORNER_PORT",
        "FOURCORNER_LOG_LEVEL",
    ]


@pytest.mark.postgres
def test_pending_migrations_of_a_postgres_schema_then_none_after_migrate(tmp_path):
    pg.require()
    with pg.fresh_schema("fc_check") as schema:
        env = {"database_url": pg.URL, "database_schema": schema}
        before = run(tmp_path, "check", "--timeout", "3", **env)
        assert re.search(
            r"^warn\s+database\s+postgresql://.*migration\(s\) pending", before.stdout, re.M
        )
        migrated = run(tmp_path, "migrate", **env)
        assert migrated.returncode == 0 and migrated.stdout.startswith("applied "), migrated
        assert f"({schema})" in migrated.stdout
        after = run(tmp_path, "check", "--timeout", "3", **env)
        assert re.search(r"^ok\s+database\s+postgresql://.*: reachable", after.stdout, re.M)


async def _first_start(data_dir: Path, schema: str) -> None:
    """The start of a first server on ``data_dir``: it makes its test PKI and stores the
    operator's certificates."""
    settings = Settings(data_dir=data_dir, database_url=pg.URL, database_schema=schema)
    container = build_container(settings)
    await web_app(container)
    await settle(container.shutdown_resources())


@pytest.mark.postgres
def test_a_data_dir_without_the_stored_certificates_fails_and_does_not_start(tmp_path):
    """A second process on a database a first one set up, with a data dir of its own and no
    copy of the first's pki/: check says FAIL and why, serve and worker refuse in that line,
    and none of them makes a test PKI there."""
    pg.require()
    with pg.fresh_schema("fc_check") as schema:
        env = {"database_url": pg.URL, "database_schema": schema}
        asyncio.run(_first_start(tmp_path / "first", schema))
        second = tmp_path / "second"
        proc = run(second, "check", "--timeout", "3", **env)
        assert proc.returncode == 1, proc.stdout
        # the certificates, and the at-rest key the database's secrets were sealed under
        (failed,) = [f for f in lines(proc.stdout, "FAIL") if "certificates" in f.split()[:2]]
        assert re.match(r"FAIL\s+certificates\s+the database holds the operator's", failed)
        assert any(re.match(r"FAIL\s+at-rest key", f) for f in lines(proc.stdout, "FAIL"))
        assert f"{second / 'pki'} does not exist" in failed and "copy pki/ and keys/" in failed
        assert proc.stdout.rstrip().endswith("failed: fix the FAIL lines")
        for command in ("serve", "worker"):
            line = refused(run(second, command, **env), 1, str(second / "pki"))
            assert "copy pki/ and keys/ from the data dir of the first process" in line
        assert not (second / "pki").exists()
        assert not (second / "keys" / "token-signing-key.pem").exists()
        # the first's copy of both, and the check is ready
        shutil.copytree(tmp_path / "first" / "pki", second / "pki")
        shutil.copytree(tmp_path / "first" / "keys", second / "keys", dirs_exist_ok=True)
        proc = run(second, "check", "--timeout", "3", **env)
        assert lines(proc.stdout, "FAIL") == [], proc.stdout
