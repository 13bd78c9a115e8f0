"""The harness proven on this service: the state machine finds no divergence between
``fourcorner serve`` (SQLite, PostgreSQL) and the model; each seeded fault, injected through
the container's ``storage_adapter`` override, is reported with a reproduction of a few
requests; the same seed makes the same reproduction; the command prints it and exits 1."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from lxml import etree

from faults import FAULTS, UniquenessUnchecked
from fourcorner.entrypoints.cli import main
from fourcorner.entrypoints.harness.runner import run
from fourcorner.entrypoints.harness.servers import Target, in_process

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent / "fourcorner"
BUDGET = 20  # examples against a real server: a bounded budget for `make test`
FAULT_BUDGET = 150  # examples to find a fault (the search stops at the first)
MAX_REPRODUCTION = 6


def test_serve_on_sqlite_agrees_with_the_model(fourcorner_server):
    report = fourcorner_server.harness(max_examples=BUDGET, seed=16, namespace="sqlite")
    assert report.ok, report.text()
    assert report.examples >= BUDGET
    # the fixture's server is started with settings it knows only (no start-up warning)
    assert "is not a setting" not in fourcorner_server.log.read_text()


@pytest.mark.postgres
class TestOnPostgres:
    @pytest.fixture
    def fourcorner_database(self, postgres_url_and_schema):
        return postgres_url_and_schema[0]

    @pytest.fixture
    def fourcorner_environment(self, postgres_url_and_schema):
        return {"FOURCORNER_DATABASE_SCHEMA": postgres_url_and_schema[1]}

    def test_serve_on_postgres_agrees_with_the_model(self, fourcorner_server):
        report = fourcorner_server.harness(max_examples=BUDGET, seed=16, namespace="pg")
        assert report.ok, report.text()


def _faulty_run(tmp_path: Path, make, seed: int = 1, namespace: str = "fault"):
    fault = make()
    with in_process(tmp_path, storage_adapter=fault) as server:
        return fault, run(
            Target(server.base_url, server.tokens),
            max_examples=FAULT_BUDGET,
            seed=seed,
            namespace=namespace,
        )


@pytest.mark.parametrize("make", FAULTS, ids=lambda f: f.name)
def test_each_seeded_fault_is_reported_with_a_short_reproduction(tmp_path, make):
    fault, report = _faulty_run(tmp_path, make)
    assert report.error is None, report.error
    assert report.findings, f"{fault.name} was not found:\n{report.text()}"
    for finding in report.findings:
        assert 1 <= len(finding.steps) <= MAX_REPRODUCTION, report.text()
        curls = [x for x in finding.reproduction(report.base_url, None) if x.startswith("curl")]
        assert len(curls) == len(finding.steps)


def test_the_same_seed_gives_the_same_reproduction(tmp_path):
    _, first = _faulty_run(tmp_path / "a", UniquenessUnchecked, seed=7, namespace="same")
    _, second = _faulty_run(tmp_path / "b", UniquenessUnchecked, seed=7, namespace="same")
    assert first.findings and second.findings
    assert [f.symbolic() for f in first.findings] == [f.symbolic() for f in second.findings]
    assert first.examples == second.examples


# A token command quicker than `fourcorner token` (which builds the whole container): the
# harness runs it once per caller of each example.
MINT = """\
import sys
from datetime import timedelta
from pathlib import Path
from fourcorner.adapters.auth.local import LocalTokenAuthority
authority = LocalTokenAuthority(Path(sys.argv[1]))
print(authority.issue(sys.argv[2], superadmin=len(sys.argv) > 3, ttl=timedelta(hours=1)))
"""


def test_the_command_prints_the_curl_reproduction_and_exits_1(tmp_path, capsys):
    mint = tmp_path / "mint.py"
    mint.write_text(MINT)
    data = tmp_path / "data"
    data.mkdir()
    token_command = f"{sys.executable} {mint} {data} {{email}} {{superadmin}}"
    with in_process(data, storage_adapter=UniquenessUnchecked()) as server:
        server.tokens("warm@harness.test", False)  # the key exists before the command reads it
        status = main(
            [
                "harness",
                "--base-url",
                server.base_url,
                "--token-command",
                token_command,
                "--max-examples",
                "5",
                "--seed",
                "3",
                "--report",
                str(tmp_path / "junit.xml"),
            ]
        )
    out = capsys.readouterr().out
    assert status == 1, out
    assert "divergence 1: POST /orgs" in out
    assert f"curl -s -X POST {server.base_url}/orgs" in out
    assert f"TOKEN_0=$({sys.executable} {mint} {data} u0." in out
    suite = etree.parse(tmp_path / "junit.xml").getroot()
    assert suite.get("failures") == "1"
    assert "curl" in suite.find("testcase/failure").text


def test_the_command_against_a_correct_server_exits_0(fourcorner_server, tmp_path, capsys):
    # `fourcorner token` itself, as docs/harness.md shows it
    command = (
        f"env FOURCORNER_DATA_DIR={fourcorner_server.data_dir} {BIN} token --email {{email}} "
        "{superadmin}"
    )
    status = main(
        [
            "harness",
            "--base-url",
            fourcorner_server.base_url,
            "--token-command",
            command,
            "--max-examples",
            "1",
            "--seed",
            "5",
            "--report",
            str(tmp_path / "junit.xml"),
        ]
    )
    out = capsys.readouterr().out
    assert status == 0, out
    assert "no divergence from the model" in out
    assert etree.parse(tmp_path / "junit.xml").getroot().get("failures") == "0"


def test_a_service_that_does_not_answer_is_an_error_not_a_divergence(capsys):
    status = main(
        [
            "harness",
            "--base-url",
            "http://127.0.0.1:9",
            "--token-command",
            "echo token",
            "--max-examples",
            "1",
        ]
    )
    out = capsys.readouterr().out
    assert status == 2, out
    assert "error: the service cannot be used: URLError" in out
