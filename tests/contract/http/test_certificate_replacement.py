"""``fourcorner replace-operator-certificate``: the operator's deliberate replacement of the
stored certificates by a data dir's files with another subject, which a start refuses. It
stores them only when every file that differs passes the checks (here a chain that does not
reach the trust anchors is refused, and nothing is replaced); afterwards a server starts with
the new files, one with the older files is refused, and each replacement is logged. On SQLite
and PostgreSQL."""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import shutil
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import pytest

import pg
from fourcorner.adapters.pki import ensure_test_pki
from fourcorner.adapters.pki.renewal import deliberate_problems
from fourcorner.adapters.pki.testpki import (
    AP_CERT,
    AP_KEY,
    SMP_CERT,
    SMP_KEY,
    SMP_NAME,
    current_leaf_pem,
    load_test_pki,
)
from fourcorner.domain.certificates import Service
from fourcorner.entrypoints.commands import replace
from fourcorner.entrypoints.commands.replace import replace_operator_certificates
from fourcorner.entrypoints.config import Settings
from fourcorner.entrypoints.container import build_container, settle, web_app
from fourcorner.entrypoints.operator_guard import stored_certificates
from fourcorner.entrypoints.preflight import StartupError

SEAT, OTHER_SEAT = "PFC000001", "PFC000002"
OTHER_SMP = "another SMP"


On = Callable[[Path], Settings]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def on(request: Any, tmp_path: Path) -> Iterator[On]:
    """The settings of a process on a data dir, all on one database."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'shared.db'}"
        yield lambda data_dir: Settings(data_dir=data_dir, database_url=url).check()
        return
    with pg.fresh_schema("fc_replace") as schema:
        yield lambda data_dir: Settings(
            data_dir=data_dir, database_url=pg.URL, database_schema=schema
        ).check()


async def _start(config: Settings) -> None:
    container = build_container(config)
    try:
        await web_app(container)
    finally:
        await settle(container.shutdown_resources())


def start(config: Settings) -> None:
    """A server's start-up on ``config`` (which stores its certificates), then its stop."""
    asyncio.run(_start(config))


def refused(config: Settings) -> str:
    with pytest.raises(StartupError) as refusal:
        start(config)
    return str(refusal.value)


def stored_pems(config: Settings) -> dict[Any, str]:
    return {key: cert.cert_pem for key, cert in stored_certificates(config).items()}


def put(folder: Path, name: str, text: str) -> None:
    (folder / name).unlink()
    (folder / name).write_text(text)


def test_a_new_subject_replaces_the_stored_certificate_only_by_the_command(
    tmp_path: Path, shared_pki: Path, on: On, caplog: Any
) -> None:
    caplog.set_level(logging.INFO, logger="fourcorner.certificates")
    # a data dir for the new files (a process loads its test PKI once)
    older, first = tmp_path / "older", tmp_path / "first"
    shutil.copytree(shared_pki, older / "pki")
    shutil.copytree(shared_pki, first / "pki")
    start(on(older))
    shutil.copytree(older / "keys", first / "keys")  # the at-rest key the others seal with
    config = on(first)
    before = stored_pems(config)

    # an AP certificate of another seat id than the process's: refused by the command too
    wrong = tmp_path / "wrong"
    shutil.copytree(first, wrong)
    pki = load_test_pki(wrong / "pki")
    cert, key = current_leaf_pem(pki.ap_ca, pki.ap_ca_key, OTHER_SEAT, days=365)
    put(wrong / "pki", AP_CERT, cert)
    put(wrong / "pki", AP_KEY, key)
    line = refused(on(wrong))
    assert "another subject" in line and "run fourcorner replace-operator-certificate" in line
    with pytest.raises(StartupError) as refusal:
        replace_operator_certificates(on(wrong), db_wait=5)
    assert f"ap.pem: its CN is '{OTHER_SEAT}', not the seat id {SEAT}" in str(refusal.value)
    assert stored_pems(config) == before

    # another SMP name: an SMP certificate of the same test SMP CA, for another subject
    cert, key = current_leaf_pem(pki.smp_ca, pki.smp_ca_key, OTHER_SMP, days=365)
    put(first / "pki", SMP_CERT, cert)
    put(first / "pki", SMP_KEY, key)
    line = refused(config)
    assert "another subject" in line and "run fourcorner replace-operator-certificate" in line
    assert stored_pems(config) == before

    # an at-rest key other than the one the stored private keys are sealed with
    other_key = base64.b64encode(os.urandom(32)).decode()
    with pytest.raises(StartupError, match="does not open the stored private key"):
        replace_operator_certificates(attrs.evolve(config, at_rest_key=other_key), db_wait=5)
    assert stored_pems(config) == before

    lines = replace_operator_certificates(config, db_wait=5)
    assert len(lines) == 3, lines  # the TEST and PROD SMP certificates, then what to do
    for line, environment in zip(lines, ("TEST", "PROD"), strict=False):
        assert line.startswith(f"replaced the operator's {environment} SMP certificate "), line
        assert f"CN={OTHER_SMP}" in line and str(first / "pki" / SMP_CERT) in line, line
    assert "restart every process with these files" in lines[-1]
    after = stored_pems(config)
    assert {k for k, v in after.items() if v == cert} == {k for k in before if k[1] is Service.SMP}
    assert {k: v for k, v in after.items() if k[1] is Service.AP} == {
        k: v for k, v in before.items() if k[1] is Service.AP
    }
    logged = [
        r for r in caplog.records if getattr(r, "event", "") == "operator.certificate_replaced"
    ]
    assert [(r.environment, r.service) for r in logged] == [("TEST", "SMP"), ("PROD", "SMP")]
    assert all(f"CN={OTHER_SMP}" in r.subject and SMP_NAME in r.replaced_subject for r in logged)

    start(config)  # the new files start
    assert stored_pems(config) == after
    line = refused(on(older))  # the files from before the replacement do not
    assert str(older / "pki" / SMP_CERT) in line and "another subject" in line, line
    assert stored_pems(config) == after
    assert replace_operator_certificates(config, db_wait=5) == [
        "the database holds this data dir's operator certificates already: nothing to replace"
    ]


def test_an_invalid_new_chain_is_refused_and_nothing_is_replaced(
    tmp_path: Path, shared_pki: Path, on: On
) -> None:
    older, first = tmp_path / "older", tmp_path / "first"
    shutil.copytree(shared_pki, older / "pki")
    shutil.copytree(shared_pki, first / "pki")
    start(on(older))
    shutil.copytree(older / "keys", first / "keys")
    config = on(first)
    before = stored_pems(config)

    # an AP certificate of another test PKI's CA, whose root this data dir does not trust
    stranger = ensure_test_pki(tmp_path / "stranger", seat_id=OTHER_SEAT)
    put(first / "pki", AP_CERT, stranger.ap_certificate_pem)
    put(first / "pki", AP_KEY, stranger.ap_key_pem)
    with pytest.raises(StartupError) as refusal:
        replace_operator_certificates(config, db_wait=5)
    line = str(refusal.value)
    assert line.startswith("nothing was replaced: "), line
    assert line.count(f"{first / 'pki' / AP_CERT}: ") == 1 and "(its chain)" in line, line
    assert stored_pems(config) == before


def test_without_stored_certificates_a_pki_or_the_at_rest_key_nothing_is_made(
    tmp_path: Path, shared_pki: Path, on: On
) -> None:
    config = on(tmp_path / "first")
    with pytest.raises(StartupError, match="holds no operator certificates"):
        replace_operator_certificates(config, db_wait=5)
    shutil.copytree(shared_pki, tmp_path / "first" / "pki")
    start(config)
    lone = tmp_path / "lone"
    lone.mkdir(mode=0o700)
    with pytest.raises(StartupError, match="this command makes none"):
        replace_operator_certificates(on(lone), db_wait=5)
    assert not (lone / "pki").exists()
    shutil.copytree(shared_pki, lone / "pki")
    with pytest.raises(StartupError, match=r"at-rest key .* does not exist"):
        replace_operator_certificates(on(lone), db_wait=5)
    assert not (lone / "keys").exists()


def test_another_seat_id_is_refused_in_one_line_by_the_command_and_a_start(
    tmp_path: Path, shared_pki: Path, on: On
) -> None:
    """The operator's participant (``0242:<SPID>``, where it receives message level
    statuses) is its seat's: a process with another ``FOURCORNER_SEAT_ID`` is refused in one
    line naming it, by the command and by a start, and nothing is stored."""
    older, first = tmp_path / "older", tmp_path / "first"
    shutil.copytree(shared_pki, older / "pki")
    shutil.copytree(shared_pki, first / "pki")
    start(on(older))
    shutil.copytree(older / "keys", first / "keys")
    before = stored_pems(on(older))
    pki = load_test_pki(first / "pki")
    cert, key = current_leaf_pem(pki.ap_ca, pki.ap_ca_key, OTHER_SEAT, days=365)
    put(first / "pki", AP_CERT, cert)
    put(first / "pki", AP_KEY, key)
    config = attrs.evolve(on(first), seat_id=OTHER_SEAT)
    with pytest.raises(StartupError) as refusal:
        replace_operator_certificates(config, db_wait=5)
    line = str(refusal.value)
    assert line.startswith(f"nothing was replaced: FOURCORNER_SEAT_ID is {OTHER_SEAT}, "), line
    assert "0242:000001" in line and "\n" not in line, line
    assert stored_pems(config) == before
    line = refused(attrs.evolve(on(older), seat_id=OTHER_SEAT))
    assert line.startswith(f"FOURCORNER_SEAT_ID is {OTHER_SEAT}, "), line
    assert stored_pems(config) == before


def test_the_command_does_not_roll_a_renewal_back_to_the_older_certificate(
    tmp_path: Path, shared_pki: Path, on: On
) -> None:
    """A start stores a renewal (the same subject, newer); the command, run with the older,
    still valid files, refuses to put the older one back, as a start refuses them."""
    stale, renewed = tmp_path / "stale", tmp_path / "renewed"
    shutil.copytree(shared_pki, stale / "pki")
    start(on(stale))
    shutil.copytree(stale, renewed)
    pki = load_test_pki(renewed / "pki")
    later = datetime.now(UTC) + timedelta(seconds=30)
    cert, key = current_leaf_pem(pki.ap_ca, pki.ap_ca_key, SEAT, days=365, now=later)
    put(renewed / "pki", AP_CERT, cert)
    put(renewed / "pki", AP_KEY, key)
    start(on(renewed))  # a renewal: stored
    after = stored_pems(on(renewed))
    assert {v for k, v in after.items() if k[1] is Service.AP} == {cert}
    assert "not newer" in refused(on(stale))
    with pytest.raises(StartupError) as refusal:
        replace_operator_certificates(on(stale), db_wait=5)
    line = str(refusal.value)
    assert line.startswith(f"nothing was replaced: {stale / 'pki' / AP_CERT}: "), line
    assert "the stored one's subject and not newer" in line, line
    assert stored_pems(on(stale)) == after


def test_a_certificate_stored_after_the_command_checked_its_files_is_kept(
    tmp_path: Path, shared_pki: Path, on: On, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command checks its files against the stored certificates, then stores them: a
    renewal another process's start stores in between is kept, and nothing is replaced."""
    older, first, renewed = tmp_path / "older", tmp_path / "first", tmp_path / "renewed"
    shutil.copytree(shared_pki, older / "pki")
    start(on(older))
    shutil.copytree(older, first)
    shutil.copytree(older, renewed)
    pki = load_test_pki(first / "pki")
    cert, key = current_leaf_pem(pki.smp_ca, pki.smp_ca_key, OTHER_SMP, days=365)
    put(first / "pki", SMP_CERT, cert)
    put(first / "pki", SMP_KEY, key)
    later = datetime.now(UTC) + timedelta(seconds=30)
    cert, key = current_leaf_pem(pki.ap_ca, pki.ap_ca_key, SEAT, days=365, now=later)
    put(renewed / "pki", AP_CERT, cert)
    put(renewed / "pki", AP_KEY, key)
    checks = []

    def checked_then_renewed(*args: Any) -> list[str]:
        if not checks:
            start(on(renewed))  # another process's start, after the command read the records
        checks.append(args)
        return deliberate_problems(*args)

    monkeypatch.setattr(replace, "deliberate_problems", checked_then_renewed)
    with pytest.raises(StartupError) as refusal:
        replace_operator_certificates(on(first), db_wait=5)
    assert checks
    line = str(refusal.value)
    assert line.startswith("nothing was replaced: the operator's TEST AP certificate "), line
    assert "another process stored it after the files were checked; run it again" in line
    assert stored_pems(on(first)) == stored_pems(on(renewed))
    assert {v for k, v in stored_pems(on(first)).items() if k[1] is Service.AP} == {cert}
