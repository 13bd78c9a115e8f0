"""``fourcorner migrate`` migrates the database and does nothing else: on a new data dir it
makes no test PKI (nor stores the operator's certificates) and no at-rest key, and a server
started afterwards on the migrated database makes its own and stores them as at any first
start. On a data dir without the at-rest key of a database that holds sealed secrets it
says so in one line."""

from __future__ import annotations

import asyncio
import shutil
from contextlib import nullcontext
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

import pg
from fourcorner.entrypoints.commands.migrate import migrate
from fourcorner.entrypoints.config import Settings
from fourcorner.entrypoints.container import build_container, web_app
from fourcorner.entrypoints.operator_guard import stored_certificates
from fourcorner.entrypoints.preflight import StartupError

from .conftest import settings_for


async def served_ready(settings: Settings) -> int:
    """A server's start-up on ``settings``, then its ``/readyz`` status."""
    app = await web_app(build_container(settings))
    async with TestClient(TestServer(app)) as client:
        return (await client.get("/readyz")).status


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_migrate_on_a_new_data_dir_makes_no_pki_and_serve_then_starts(
    tmp_path: Path, backend: str
) -> None:
    with pg.fresh_schema("fc_migrate") if backend == "postgres" else nullcontext("") as schema:
        settings = settings_for(backend, tmp_path, schema)
        assert migrate(settings, db_wait=5).startswith("applied ")
        assert not (tmp_path / "pki").exists()
        assert not (tmp_path / "keys").exists()
        assert stored_certificates(settings) == {}
        assert "is up to date: no migration to apply" in migrate(settings, db_wait=5)

        assert asyncio.run(served_ready(settings)) == 200
        stored = stored_certificates(settings)
        assert {c.cert_pem for c in stored.values()} == {
            (tmp_path / "pki" / name).read_text() for name in ("ap.pem", "smp.pem")
        }
        assert len(stored) == 4  # AP and SMP, TEST and PROD


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_migrate_without_the_key_of_the_sealed_secrets_says_so(
    tmp_path: Path, backend: str
) -> None:
    first, job = tmp_path / "first", tmp_path / "job"
    first.mkdir(mode=0o700)
    job.mkdir(mode=0o700)
    with pg.fresh_schema("fc_migrate") if backend == "postgres" else nullcontext("") as schema:
        settings = settings_for(backend, first, schema)
        database = {"database_url": settings.database_url, "database_schema": schema}
        assert asyncio.run(served_ready(settings)) == 200  # seals the operator's keys
        on_job = Settings(data_dir=job, **database).check()
        with pytest.raises(StartupError) as refusal:
            migrate(on_job, db_wait=5)
        line = str(refusal.value)
        assert line.startswith("the database holds sealed secrets (the private key of "), line
        assert f"{job / 'keys' / 'at-rest.key'} does not exist" in line and "\n" not in line
        assert not (job / "keys").exists()
        shutil.copytree(first / "keys", job / "keys")
        assert "is up to date: no migration to apply" in migrate(on_job, db_wait=5)
