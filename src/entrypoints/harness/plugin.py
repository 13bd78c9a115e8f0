"""The pytest plugin (entry point ``pytest11``, installed with the package): a started
``fourcorner serve`` on a temporary data dir for any test that names ``fourcorner_server``.

    def test_it(fourcorner_server):
        report = fourcorner_server.harness(max_examples=10)
        assert report.ok, report.text()

The server uses SQLite in its data dir; override the ``fourcorner_database`` fixture (a
``postgresql://`` URL, optionally with ``FOURCORNER_DATABASE_SCHEMA`` in
``fourcorner_environment``) to run it on PostgreSQL. Tokens are minted with the server's own
key (``fourcorner token`` without a process of its own).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from fourcorner.entrypoints.harness.servers import Target, free_port


class ServedProcess:
    """``fourcorner serve`` as a child process, ready once ``/readyz`` answers 200."""

    def __init__(
        self, data_dir: Path, database_url: str = "", env: Mapping[str, str] | None = None
    ) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("FOURCORNER_")},
            "FOURCORNER_DATA_DIR": str(data_dir),
            "FOURCORNER_PORT": str(self.port),
            "FOURCORNER_HOST": "127.0.0.1",
            **dict(env or {}),
        }
        if database_url:
            self.env["FOURCORNER_DATABASE_URL"] = database_url
        self.log = data_dir / "server.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self._authority: Any = None

    def start(self, timeout: float = 60.0) -> ServedProcess:
        program = Path(sys.executable).parent / "fourcorner"
        command = (
            [str(program)]
            if program.exists()
            else [sys.executable, "-m", "fourcorner.entrypoints.cli"]
        )
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [*command, "serve"], env=self.env, stdout=subprocess.DEVNULL, stderr=log
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"fourcorner serve exited: {self.log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(self.base_url + "/readyz", timeout=1) as r:  # noqa: S310
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"fourcorner serve was not ready in {timeout:g} s")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None

    def token(self, email: str, superadmin: bool = False) -> str:
        """A bearer token signed with the server's key (FOURCORNER_AUTH_MODE=local)."""
        if self._authority is None:
            from fourcorner.adapters.auth import LocalTokenAuthority

            self._authority = LocalTokenAuthority(self.data_dir)
        return str(
            self._authority.issue(email, name="", superadmin=superadmin, ttl=timedelta(hours=12))
        )

    def target(self) -> Target:
        """The server as the harness's service under test."""
        return Target(self.base_url, self.token)

    def harness(self, **options: Any) -> Any:
        """Run the harness against this server (``runner.run``'s options); its report."""
        from fourcorner.entrypoints.harness.runner import run

        return run(self.target(), **options)


@pytest.fixture
def fourcorner_database() -> str:
    """The server's database URL; empty: SQLite in the data dir."""
    return ""


@pytest.fixture
def fourcorner_environment() -> dict[str, str]:
    """More ``FOURCORNER_*`` settings for the server."""
    return {}


@pytest.fixture
def fourcorner_server(
    tmp_path_factory: pytest.TempPathFactory,
    fourcorner_database: str,
    fourcorner_environment: dict[str, str],
) -> Iterator[ServedProcess]:
    """A started ``fourcorner serve`` on a temporary data dir, stopped after the test."""
    server = ServedProcess(
        tmp_path_factory.mktemp("fourcorner"), fourcorner_database, fourcorner_environment
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()
