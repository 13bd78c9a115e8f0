"""The help of ``fourcorner worker`` and ``serve`` names every worker they run."""

from __future__ import annotations

import pytest

from fourcorner.entrypoints import cli


@pytest.mark.parametrize("command", ["worker", "serve"])
def test_the_help_names_every_worker(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main([command, "--help"])
    page = " ".join(capsys.readouterr().out.split())
    for work in ("webhook delivery", "sending", "SML registrations", "blob sweep", "directory"):
        assert work in page, (command, work, page)
