"""Processes of one deployment, each on a data dir of its own, on one PostgreSQL database:
the operator's certificates stored by the first are the ones every other process must start
with. A process whose data dir has no copy of them (no ``pki/``, or a file of it missing)
refuses to start, ``serve`` and ``worker`` alike, before it makes a test PKI of its own; one
whose files are a renewal of the stored ones replaces them; one with older files, or a test
PKI of its own, refuses. Whatever is refused leaves the stored certificates as they were."""

from __future__ import annotations

import asyncio
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import pg
from fourcorner.adapters.pki import ensure_test_pki
from fourcorner.adapters.pki.testpki import (
    AP_CERT,
    AP_KEY,
    SMP_CERT,
    current_leaf_pem,
    load_test_pki,
)
from fourcorner.domain.certificates import Service
from fourcorner.entrypoints.container import build_container, run_workers, settle, web_app
from fourcorner.entrypoints.operator_guard import stored_certificates
from fourcorner.entrypoints.preflight import StartupError

from .conftest import settings_for

pytestmark = pytest.mark.postgres


async def start(data_dir: Path, schema: str, validator: Any) -> None:
    """Start a server process on ``data_dir`` (its start-up alone), then stop it."""
    container = build_container(settings_for("postgres", data_dir, schema), validator=validator)
    await web_app(container)
    await settle(container.shutdown_resources())


async def refused(data_dir: Path, schema: str, validator: Any) -> str:
    """The line a server process on ``data_dir`` refuses to start with."""
    container = build_container(settings_for("postgres", data_dir, schema), validator=validator)
    with pytest.raises(StartupError) as refusal:
        await web_app(container)
    await settle(container.shutdown_resources())
    return str(refusal.value)


def stored(data_dir: Path, schema: str) -> dict[Any, str]:
    found = stored_certificates(settings_for("postgres", data_dir, schema))
    return {key: cert.cert_pem for key, cert in found.items()}


async def test_a_data_dir_without_the_shared_pki_refuses_to_start_and_makes_none(
    tmp_path: Path, shared_pki: Path, validator: Any
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    shutil.copytree(shared_pki, first / "pki")
    with pg.fresh_schema("fc_http") as schema:
        await start(first, schema, validator)
        before = stored(first, schema)
        assert len(before) == 4  # AP and SMP, TEST and PROD

        line = await refused(second, schema, validator)
        assert f"({second / 'pki'} does not exist)" in line, line
        assert "copy pki/ and keys/" in line and "Several processes" in line, line
        assert not (second / "pki").exists()  # no test PKI of its own
        container = build_container(settings_for("postgres", second, schema))
        with pytest.raises(StartupError, match="copy pki/ and keys/"):
            await run_workers(container, asyncio.Event())
        assert not (second / "pki").exists()

        # a copy that lacks a file: that file is named
        shutil.copytree(shared_pki, second / "pki")
        (second / "pki" / SMP_CERT).unlink()
        line = await refused(second, schema, validator)
        assert f"({second / 'pki' / SMP_CERT} does not exist)" in line, line
        assert stored(first, schema) == before

        # the whole copy: it starts
        shutil.copy(shared_pki / SMP_CERT, second / "pki" / SMP_CERT)
        await start(second, schema, validator)
        assert stored(first, schema) == before


async def test_a_renewal_replaces_the_stored_certificate_and_older_files_then_refuse(
    tmp_path: Path, shared_pki: Path, validator: Any
) -> None:
    first, renewing, own = tmp_path / "first", tmp_path / "renewing", tmp_path / "own"
    shutil.copytree(shared_pki, first / "pki")
    shutil.copytree(shared_pki, renewing / "pki")
    pki = load_test_pki(shared_pki)
    # the AP certificate renewed by the same test CA: a new key, valid from a minute later
    later = datetime.now(UTC) + timedelta(minutes=1)
    cert, key = current_leaf_pem(pki.ap_ca, pki.ap_ca_key, pki.seat_id, days=700, now=later)
    for name, text in ((AP_CERT, cert), (AP_KEY, key)):
        (renewing / "pki" / name).unlink()
        (renewing / "pki" / name).write_text(text)
    with pg.fresh_schema("fc_http") as schema:
        await start(first, schema, validator)
        before = stored(first, schema)

        await start(renewing, schema, validator)
        after = stored(first, schema)
        assert {k: v for k, v in after.items() if v == cert}.keys() == {
            k for k in before if k[1] is Service.AP
        }
        assert {k: v for k, v in after.items() if k[1] is Service.SMP} == {
            k: v for k, v in before.items() if k[1] is Service.SMP
        }

        # a process restarted with the files from before the renewal
        line = await refused(first, schema, validator)
        assert str(first / "pki" / AP_CERT) in line and "not newer" in line, line
        assert "copy the current pki/ and keys/ from one of them" in line, line
        assert stored(first, schema) == after

        # a data dir with a test PKI of its own, made later than the renewal
        ensure_test_pki(own, seat_id=pki.seat_id, clock=lambda: later + timedelta(minutes=1))
        line = await refused(own, schema, validator)
        assert str(own / "pki" / AP_CERT) in line and "another test PKI" in line, line
        assert stored(first, schema) == after
