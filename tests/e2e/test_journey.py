"""``examples/journey.py``, run as a user would against ``fourcorner serve`` on a data dir of
its own: the whole journey passes, twice in a row (it finds what the first run created), and
against a server that refuses webhooks to this machine it stops with a line saying how to
start the server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .test_serve import BIN, Server, free_port

pytestmark = pytest.mark.slow
JOURNEY = Path(__file__).resolve().parents[2] / "examples" / "journey.py"


def journey(server: Server) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(JOURNEY), "--base-url", server.base, "--fourcorner", str(BIN)],
        env=server.env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_journey_runs_against_the_server(tmp_path: Path) -> None:
    server = Server(tmp_path, free_port())
    server.start()
    try:
        refused = journey(server)
    finally:
        server.stop()
    assert refused.returncode == 1, refused.stdout
    assert "created organisation Widgets AB" in refused.stdout
    assert "FOURCORNER_WEBHOOK_ALLOW_PRIVATE_TARGETS=true" in refused.stderr
    assert "Traceback" not in refused.stderr

    server.env["FOURCORNER_WEBHOOK_ALLOW_PRIVATE_TARGETS"] = "true"
    server.start()
    try:
        first = journey(server)
        assert first.returncode == 0, first.stdout + first.stderr
        again = journey(server)
        assert again.returncode == 0, again.stdout + again.stderr
    finally:
        server.stop()
    for step in (
        "organisation ACME AB (",  # created by the refused run, found by this one
        "participant 0007:5560360793",
        "webhook: transaction.received",
        "webhook: mls.received",
        "sent: COMPLETED, MLS AB",
        "the very document ACME AB sent",
        "done: the invoice went from corner 1 to corner 4",
    ):
        assert step in first.stdout, (step, first.stdout)
    assert "found organisation Widgets AB" in again.stdout
    assert "done:" in again.stdout
