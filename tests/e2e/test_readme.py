"""The README's PostgreSQL recipe, run as written: its four commands, taken from the README
itself, against a database this test creates (and drops), with only
``FOURCORNER_DATABASE_URL`` set — the tables go to the database's default schema."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

import pg

from .test_serve import free_port

pytestmark = [pytest.mark.slow, pytest.mark.postgres]
README = Path(__file__).resolve().parents[2] / "README.md"
EXAMPLE_URL = "postgresql://app@db.example/fourcorner"


def recipe() -> list[str]:
    """The command lines of the README's "Running on PostgreSQL" block, comments removed."""
    text = README.read_text()
    section = text.split("## Running on PostgreSQL", 1)[1]
    block = re.search(r"```\n(.*?)```", section, re.S)
    assert block is not None, "the README has no PostgreSQL recipe"
    return [line.split("#", 1)[0].strip() for line in block.group(1).splitlines() if line.strip()]


@contextmanager
def fresh_database() -> Iterator[str]:
    """The URL of a database created for the caller and dropped afterwards."""
    import psycopg

    pg.require()
    name = f"fc_readme_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg.URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(urlsplit(pg.URL)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(pg.URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_the_readme_postgres_recipe_runs_as_written(tmp_path):
    lines = recipe()
    assert lines[0] == f"export FOURCORNER_DATABASE_URL={EXAMPLE_URL}", lines
    assert lines[1:] == [
        "fourcorner migrate",
        "FOURCORNER_WORKERS=false fourcorner serve",
        "fourcorner worker",
    ], lines
    port = free_port()
    with fresh_database() as url:
        env = {k: v for k, v in os.environ.items() if not k.startswith("FOURCORNER_")}
        env |= {
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
            "FOURCORNER_DATA_DIR": str(tmp_path),
            "FOURCORNER_PORT": str(port),
        }
        # the export line sets the environment the other lines run in; each of those is one
        # simple command, which bash replaces itself with (so signals reach fourcorner)
        name, value = lines[0].removeprefix("export ").split("=", 1)
        env[name] = value.replace(EXAMPLE_URL, url)
        migrate = subprocess.run(
            ["bash", "-c", lines[1]], env=env, capture_output=True, text=True, timeout=120
        )
        assert migrate.returncode == 0, migrate.stderr
        assert re.fullmatch(
            r"applied \d+ migrations to postgresql://\S+ \(the default schema\): 0001_initial.*\n",
            migrate.stdout,
        ), migrate.stdout
        logs = {name: tmp_path / f"{name}.log" for name in ("serve", "worker")}
        procs = [
            subprocess.Popen(
                ["bash", "-c", line],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=logs[name].open("wb"),
            )
            for name, line in (("serve", lines[2]), ("worker", lines[3]))
        ]
        try:
            _ready(f"http://127.0.0.1:{port}/readyz", procs, logs)
            deadline = time.monotonic() + 30
            while b"workers started" not in logs["worker"].read_bytes():
                assert procs[1].poll() is None, logs["worker"].read_text()
                assert time.monotonic() < deadline, "the worker did not start"
                time.sleep(0.1)
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.wait(timeout=15)
        assert [p.returncode for p in procs] == [0, 0], [p.read_text() for p in logs.values()]
        import psycopg

        with psycopg.connect(url) as conn:
            row = conn.execute("SELECT count(*) FROM public.schema_migrations").fetchone()
        assert row is not None and row[0] >= 1  # in the default schema, public


def _ready(url: str, procs: list[subprocess.Popen[bytes]], logs: dict[str, Path]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert procs[0].poll() is None, logs["serve"].read_text()
        try:
            with urllib.request.urlopen(url, timeout=1) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise AssertionError("the server did not become ready")
