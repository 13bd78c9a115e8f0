"""``fourcorner check`` in process, on what ``serve`` refuses or fails on: operator certificate
files that cannot be read (with or without trust anchors), a host this machine cannot listen
on (and a port in use, a warning), an at-rest key that does not open the secrets the database
holds (or none where it holds some), and one being rotated (secrets only the previous key
opens are a warning until ``fourcorner reseal`` ran). The database is only read."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import re
import socket
import sqlite3
from pathlib import Path
from typing import Any

import psycopg
import pytest

import pg
from fourcorner.application import operator_setup
from fourcorner.domain.envelope import seat_spid
from fourcorner.entrypoints.check import run_check
from fourcorner.entrypoints.commands.reseal import reseal
from fourcorner.entrypoints.config import Settings
from fourcorner.entrypoints.container import build_container, resolve

KEY = base64.b64encode(bytes(range(32))).decode()
OTHER_KEY = base64.b64encode(bytes(range(1, 33))).decode()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def check(data_dir: Path, **settings: str) -> tuple[int, list[str]]:
    """The exit status and the lines of ``fourcorner check`` with ``settings`` (lower-case
    names, as the configuration file writes them) on ``data_dir``."""
    env = {"FOURCORNER_DATA_DIR": str(data_dir), "FOURCORNER_PORT": str(free_port())}
    env |= {f"FOURCORNER_{k.upper()}": v for k, v in settings.items()}
    lines: list[str] = []
    status = run_check(lines.append, 0.5, env)
    return status, lines


def found(lines: list[str], level: str, subject: str, *says: str) -> str:
    """The one line of ``level`` about ``subject``, checked to say each of ``says``."""
    [line] = [x for x in lines if re.match(rf"{level}\s+{subject}\s", x)] or [
        f"no {level} line on {subject} in {lines}"
    ]
    for text in says:
        assert text in line, (text, line)
    return line


@pytest.mark.parametrize("folder", ["absent", "empty"])
def test_operator_certificate_files_are_read_without_trust_anchors(
    tmp_path: Path, folder: str
) -> None:
    certs = tmp_path / folder
    if folder == "empty":
        certs.mkdir()
    status, lines = check(tmp_path / "var", operator_certs_dir=str(certs))
    assert status == 1, lines
    found(lines, "FAIL", "certificates", f"{certs / 'test' / 'ap.pem'} cannot be read")
    assert lines[-1].endswith("failed: fix the FAIL lines")


def test_a_host_this_machine_cannot_listen_on_fails(tmp_path: Path) -> None:
    status, lines = check(tmp_path, host="999.1.1.1")
    assert status == 1, lines
    found(lines, "FAIL", "listen", "FOURCORNER_HOST='999.1.1.1' is not a name or address")
    status, lines = check(tmp_path, host="127.0.0.1")
    assert status == 0, lines
    found(lines, "ok", "listen", "127.0.0.1:")


def test_a_port_in_use_is_a_warning(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        status, lines = check(tmp_path, port=port)
    assert status == 0, lines
    found(lines, "warn", "listen", f"127.0.0.1:{port} is in use by another program")


async def sealed_by(settings: Settings) -> None:
    """What ``serve`` stores at start: the operator's certificates, their keys sealed."""
    container = build_container(settings)
    await container.init_resources()
    try:
        await operator_setup.ensure_operator(
            await resolve(container.context),
            await resolve(container.network),
            container.operator_environments(),
            seat_spid(settings.seat_id),
        )
    finally:
        await container.shutdown_resources()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_the_at_rest_key_must_open_the_stored_secrets(tmp_path: Path) -> None:
    data = tmp_path / "var"
    database = f"sqlite:///{data / 'fourcorner.db'}"
    await sealed_by(Settings(data_dir=data, database_url=database, at_rest_key=KEY))
    before = digest(data / "fourcorner.db")

    status, lines = check(data, database_url=database, at_rest_key=KEY)
    assert status == 0, lines
    found(lines, "ok", "stored secrets", "the at-rest key opens the private key of certificate")

    status, lines = check(data, database_url=database, at_rest_key=OTHER_KEY)
    assert status == 1, lines
    found(lines, "FAIL", "stored secrets", "does not open", "sealed under another at-rest key")

    # no key at all: the server would make a new one, which opens nothing stored
    status, lines = check(data, database_url=database)
    assert status == 1, lines
    found(lines, "FAIL", "at-rest key", "does not exist", "restore", "FOURCORNER_AT_REST_KEY")
    assert not (data / "keys" / "at-rest.key").exists()

    # a key file of another key
    (data / "keys").mkdir(exist_ok=True)
    (data / "keys" / "at-rest.key").write_bytes(base64.b64decode(OTHER_KEY))
    status, lines = check(data, database_url=database)
    assert status == 1, lines
    found(lines, "FAIL", "stored secrets", "does not open")
    (data / "keys" / "at-rest.key").write_bytes(base64.b64decode(KEY))
    assert check(data, database_url=database)[0] == 0

    assert digest(data / "fourcorner.db") == before  # only read
    # (a reader of a WAL database makes its -wal and -shm files, as the server has them)
    kept = {p.name for p in data.iterdir()} - {"fourcorner.db-wal", "fourcorner.db-shm"}
    assert kept == {"fourcorner.db", "keys", "pki"}


@pytest.mark.postgres
async def test_the_at_rest_key_must_open_the_secrets_of_a_postgres_schema(
    tmp_path: Path,
) -> None:
    with pg.fresh_schema("fc_check") as schema:
        env = {"database_url": pg.URL, "database_schema": schema}
        await sealed_by(Settings(data_dir=tmp_path, at_rest_key=KEY, **env))
        status, lines = check(tmp_path, at_rest_key=KEY, **env)
        assert status == 0, lines
        found(lines, "ok", "stored secrets", "opens the private key of certificate")
        status, lines = check(tmp_path, at_rest_key=OTHER_KEY, **env)
        assert status == 1, lines
        found(lines, "FAIL", "stored secrets", "does not open")


def test_a_fresh_data_dir_has_no_stored_secret_to_open(tmp_path: Path) -> None:
    status, lines = check(tmp_path / "var")
    assert status == 0, lines
    found(lines, "warn", "at-rest key", "does not exist yet; the server creates it")
    assert not any("stored secrets" in line for line in lines)
    assert not (tmp_path / "var").exists()
    assert os.listdir(tmp_path) == []


THIRD_KEY = base64.b64encode(bytes(range(2, 34))).decode()


def test_a_rotation_warns_until_fourcorner_reseal_ran(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The at-rest key rotated: check warns of secrets only the previous key opens and fails
    those neither opens; ``fourcorner reseal`` seals them under the new one (saying how many),
    after which the previous key can go; run again it does nothing."""
    data = tmp_path / "var"
    database = f"sqlite:///{data / 'fourcorner.db'}"
    asyncio.run(sealed_by(Settings(data_dir=data, database_url=database, at_rest_key=KEY)))
    rotated = {"database_url": database, "at_rest_key": OTHER_KEY, "at_rest_key_previous": KEY}

    status, lines = check(data, **rotated)
    assert status == 0, lines
    found(lines, "warn", "stored secrets", "only with FOURCORNER_AT_REST_KEY_PREVIOUS", "reseal")
    status, lines = check(
        data, database_url=database, at_rest_key=THIRD_KEY, at_rest_key_previous=OTHER_KEY
    )
    assert status == 1, lines
    found(
        lines, "FAIL", "stored secrets", "does not open", "or with FOURCORNER_AT_REST_KEY_PREVIOUS"
    )

    # a reseal under a key that opens none of them: each named, left as it is, exit 1
    out: list[str] = []
    stranger = Settings(data_dir=data, database_url=database, at_rest_key=THIRD_KEY)
    assert reseal(stranger, out=out.append) == 1
    [said] = out
    counted = re.fullmatch(r"resealed 0 .*; (\d+) could not be opened", said)
    assert counted, said
    unopened = int(counted[1])
    assert unopened > 0
    assert "neither at-rest key opens it" in capsys.readouterr().err
    assert check(data, **rotated)[0] == 0  # untouched: the previous key still opens them

    out.clear()
    assert reseal(Settings(data_dir=data, **rotated), out=out.append) == 0
    [said] = out
    assert said.startswith(f"resealed {unopened} stored secret(s)"), said
    assert said.endswith("; 0 could not be opened"), said
    status, lines = check(data, database_url=database, at_rest_key=OTHER_KEY)  # previous dropped
    assert status == 0, lines
    found(lines, "ok", "stored secrets", f"and the {unopened - 1} other stored secret(s)")

    out.clear()
    assert reseal(Settings(data_dir=data, **rotated), out=out.append) == 0
    assert out[0].startswith("resealed 0 stored secret(s)"), out


def test_a_bad_previous_at_rest_key_fails(tmp_path: Path) -> None:
    status, lines = check(tmp_path / "var", at_rest_key_previous="c2hvcnQ=")
    assert status == 1, lines
    found(lines, "FAIL", "configuration", "FOURCORNER_AT_REST_KEY_PREVIOUS is not the base64")
    assert "c2hvcnQ" not in "".join(lines)


def connections_counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The databases ``sqlite3.connect`` and ``psycopg.connect`` are asked for from now on."""
    opened: list[str] = []
    for module in (sqlite3, psycopg):
        real = module.connect

        def counted(*args: Any, _real: Any = real, **kwargs: Any) -> Any:
            opened.append(str(args[0]))
            return _real(*args, **kwargs)

        monkeypatch.setattr(module, "connect", counted)
    return opened


async def check_opens_the_database_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, **env: str
) -> None:
    """``check`` opens the database once, and reads there both a secret (the at-rest key
    opens it) and the operator's certificates (a data dir without their files is refused as
    the server refuses it)."""
    await sealed_by(Settings(data_dir=tmp_path / "var", at_rest_key=KEY, **env))
    opened = connections_counted(monkeypatch)
    status, lines = check(tmp_path / "var", at_rest_key=KEY, **env)
    assert status == 0, lines
    found(lines, "ok", "stored secrets", "opens the private key of certificate")
    assert len(opened) == 1, opened
    opened.clear()
    status, lines = check(tmp_path / "other", at_rest_key=KEY, **env)
    assert status == 1, lines
    found(lines, "FAIL", "certificates", "the database holds the operator's certificates")
    assert len(opened) == 1, opened


async def test_check_opens_a_sqlite_database_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    database = f"sqlite:///{tmp_path / 'shared.db'}"
    await check_opens_the_database_once(monkeypatch, tmp_path, database_url=database)


@pytest.mark.postgres
async def test_check_opens_a_postgres_database_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with pg.fresh_schema("fc_check") as schema:
        env = {"database_url": pg.URL, "database_schema": schema}
        await check_opens_the_database_once(monkeypatch, tmp_path, **env)


@pytest.mark.postgres
async def test_a_failed_read_on_postgresql_spoils_none_of_the_other_checks(tmp_path: Path) -> None:
    """The checks read the database on one connection: a statement that fails there (here the
    operator's certificates, their column renamed) is said on its own line (before, the
    certificates' check ran as if none were stored, with nothing said), and the statements
    after it are still answered on their own (the connection is in autocommit), not with
    "current transaction is aborted"."""
    with pg.fresh_schema("fc_check") as schema:
        env = {"database_url": pg.URL, "database_schema": schema}
        await sealed_by(Settings(data_dir=tmp_path / "var", at_rest_key=KEY, **env))
        with psycopg.connect(pg.URL, autocommit=True) as conn:
            conn.execute(f'ALTER TABLE "{schema}".certificates RENAME COLUMN data TO kept')
        status, lines = check(tmp_path / "var", at_rest_key=KEY, **env)
        assert status == 0, lines  # warnings: the database's shape is not this release's
        said = found(lines, "warn", "certificates", "certificates cannot be read", '"data"')
        assert "\n" not in said, said
        assert not [line for line in lines if "aborted" in line], lines
        said = found(
            lines, "warn", "stored secrets", "not checked against the at-rest key", '"data"'
        )
        assert "\n" not in said, said
