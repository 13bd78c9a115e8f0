"""End to end: ``fourcorner serve`` as a subprocess, a token from ``fourcorner token``, the
mode-change walk, a restart, and everything still there."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from sbd_factory import make_sbd

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent / "fourcorner"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, data_dir: Path, port: int) -> None:
        self.env = {
            **os.environ,
            "FOURCORNER_DATA_DIR": str(data_dir),
            "FOURCORNER_PORT": str(port),
            "FOURCORNER_HOST": "127.0.0.1",
        }
        self.env.pop("FOURCORNER_DATABASE_URL", None)
        self.base = f"http://127.0.0.1:{port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = data_dir / "server.log"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [str(BIN), "serve"], env=self.env, stdout=subprocess.DEVNULL, stderr=self.log.open("ab")
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited: {self.log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(self.base + "/readyz", timeout=1) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.1)
        raise AssertionError("server did not become ready")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=15)
            self.proc = None

    def token(self, email: str, *extra: str) -> str:
        out = subprocess.run(
            [str(BIN), "token", "--email", email, *extra],
            env=self.env,
            check=True,
            capture_output=True,
            text=True,
        )
        return out.stdout.strip()

    def call_raw(self, method: str, path: str, token: str, data: bytes) -> tuple[int, Any]:
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {token}")
        req.add_header("Content-Type", "application/xml")
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def call(self, method: str, path: str, token: str, body: Any = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())


def test_serve_walk_restart_and_everything_persists(tmp_path: Path) -> None:
    server = Server(tmp_path, free_port())
    server.start()
    try:
        alice = server.token("alice@example.com", "--name", "Alice Admin")
        root = server.token("root@example.com", "--superadmin")
        status, org = server.call(
            "POST",
            "/orgs",
            alice,
            {
                "legalIdentifier": "2120000787",
                "legalName": "ACME AB",
                "countryCode": "SE",
                "legalIdentifierCode": "SE:ORGNR",
            },
        )
        assert status == 201, org
        contact = {"name": "Bea", "email": "bea@example.com", "contactType": "BUSINESS"}
        status, body = server.call("PUT", f"/orgs/{org['id']}", alice, {"contacts": [contact]})
        assert status == 200, body
        status, body = server.call(
            "PUT", f"/orgs/{org['id']}", alice, {"modeChangeRequest": "WHITELABEL"}
        )
        assert status == 200 and body["modeChangeRequest"] == "WHITELABEL", body
        status, body = server.call(
            "PUT", f"/orgs/{org['id']}", root, {"organisationMode": "WHITELABEL"}
        )
        assert status == 200 and body["organisationMode"] == "WHITELABEL", body
        status, key = server.call(
            "POST",
            f"/orgs/{org['id']}/api_keys",
            alice,
            {"name": "ci", "expires": "2999-01-01T00:00:00Z", "role": "orgadmin"},
        )
        assert status == 201, key
        status, hook = server.call(
            "POST",
            f"/orgs/{org['id']}/webhooks",
            alice,
            {"url": "https://hooks.example.com/in", "events": ["webhook.test"]},
        )
        assert status == 201, hook
        secrets = [key["key"], hook["secret"]]
        # a document whose contents must not reach the log either
        _, smps = server.call("GET", f"/orgs/{org['id']}/smps/alltouse", alice)
        _, aps = server.call("GET", f"/orgs/{org['id']}/aps/alltouse", alice)
        smp = next(x for x in smps["items"] if x["environment"] == "TEST")
        ap = next(x for x in aps["items"] if x["environment"] == "TEST")
        sender = "0088:7300010000001"
        status, body = server.call(
            "POST",
            f"/orgs/{org['id']}/participants",
            alice,
            {"name": "S", "participantIdentifier": sender, "smpRef": smp["id"], "apRef": ap["id"]},
        )
        assert status == 201, body
        marker = "SECRET-INVOICE-CONTENT-7f3a"
        sbd = make_sbd(sender=sender).replace(
            b"</Invoice>", f"<!-- {marker} --></Invoice>".encode()
        )
        status, body = server.call_raw(
            "POST", f"/orgs/{org['id']}/transactions?ap={ap['id']}", alice, sbd
        )
        assert status == 202, body
        secrets.append(marker)
    finally:
        server.stop()

    assert (tmp_path / "fourcorner.db").exists()
    server.start()
    try:
        status, again = server.call("GET", f"/orgs/{org['id']}", alice)
        assert status == 200, again
        assert again["organisationMode"] == "WHITELABEL"
        assert again["modeChangeRequest"] is None
        assert again["contacts"][0]["contactType"] == "BUSINESS"
        status, me = server.call("GET", "/users/me", alice)
        assert me["name"] == "Alice Admin"
        assert [m["orgId"] for m in me["memberships"]] == [org["id"]]
    finally:
        server.stop()
    log = server.log.read_text()
    assert '"route": "/orgs/{orgId}"' in log  # the access log is there...
    lines = [json.loads(line) for line in log.splitlines()]  # one JSON object a line
    assert all(line["event"] for line in lines)
    events = [line["event"] for line in lines]
    assert events.count("service.start") == 2 and events.count("service.stop") == 2
    start = next(line for line in lines if line["event"] == "service.start")
    assert start["role"] == "serve" and start["configuration"]["port"] == int(
        server.env["FOURCORNER_PORT"]
    )
    assert start["configuration"]["database"].startswith("sqlite:///")
    assert "at_rest_key" not in start["configuration"]
    requests = [line for line in lines if line["event"] == "http.request"]
    assert {
        "status",
        "error_code",
        "org_id",
        "caller_kind",
        "caller_id",
        "duration_ms",
        "client",
    } <= set(requests[-1])
    for secret in (alice, root, *secrets):
        assert secret not in log  # ...and no token, API key or webhook secret is in it
