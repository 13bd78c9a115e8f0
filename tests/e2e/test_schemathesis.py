"""Schema fuzzing: schemathesis generates requests for every operation of the served
/openapi.json, authenticated as the orgadmin of a real organisation; no answer may be a 5xx,
and every answer must conform to the document (status codes, content types, bodies). It
runs in the test's temporary folder, so what schemathesis writes stays out of the work tree."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .test_serve import Server, free_port

pytestmark = pytest.mark.slow
ST = Path(sys.executable).parent / "st"


def test_every_operation_conforms_to_the_openapi_document(tmp_path: Path) -> None:
    server = Server(tmp_path, free_port())
    server.start()
    try:
        token = server.token("fuzz@example.com")
        status, org = server.call(
            "POST",
            "/orgs",
            token,
            {
                "legalIdentifier": "2120000787",
                "legalName": "Fuzz AB",
                "countryCode": "SE",
                "legalIdentifierCode": "SE:ORGNR",
            },
        )
        assert status == 201, org
        config = tmp_path / "schemathesis.toml"
        config.write_text(f"[parameters]\n{json.dumps('path.orgId')} = {json.dumps(org['id'])}\n")
        run = subprocess.run(
            [
                str(ST),
                "--config-file",
                str(config),
                "run",
                f"{server.base}/openapi.json",
                "-H",
                f"Authorization: Bearer {token}",
                "-c",
                "not_a_server_error,status_code_conformance,response_schema_conformance,"
                "content_type_conformance",
                "-n",
                "10",
                "--phases",
                "examples,fuzzing",
                "--seed",
                "1",
            ],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=tmp_path,  # its crash cache (.schemathesis/) goes there, not into the work tree
        )
        assert run.returncode == 0 and " passed" in run.stdout, run.stdout[-6000:]
        selected = re.search(r"Selected: (\d+)/(\d+)", run.stdout)
        assert selected and selected.group(1) == selected.group(2)  # every operation tested
    finally:
        server.stop()
