"""State shared through PostgreSQL only: two API processes (``fourcorner serve``, workers off)
and two workers (``fourcorner worker``), each on a data dir of its own, on one database, with
blobs in the database (the default there). They share their keys and the test PKI, as an
operator gives every machine the same ones, and nothing else: no folder is common to two of
them.

Invoices are sent through both API processes; the workers send them over AS4 to the access
point the second API process serves, which takes them in for the receiving organisation and
sends back their message level statuses. Every transaction, sent or received, is then read
through the API process that did not take it in, its artefacts included, and the documents
read back are byte for byte the ones sent. No data dir holds a blob: only the database does.
"""

from __future__ import annotations

import base64
import importlib.util
import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import pg
from fourcorner.adapters.pki import ensure_test_pki

from .test_serve import BIN, free_port

pytestmark = [pytest.mark.slow, pytest.mark.postgres]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def journey() -> ModuleType:
    """``examples/journey.py``: its API client and steps (organisations, participants)."""
    spec = importlib.util.spec_from_file_location("journey", EXAMPLES / "journey.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Process:
    """One ``fourcorner`` process on a data dir of its own."""

    def __init__(self, role: str, data_dir: Path, env: dict[str, str], port: int = 0) -> None:
        self.role, self.data_dir, self.port = role, data_dir, port
        self.env = {**env, "FOURCORNER_DATA_DIR": str(data_dir)}
        if port:
            self.env |= {"FOURCORNER_PORT": str(port), "FOURCORNER_WORKERS": "false"}
        self.log = data_dir.parent / f"{data_dir.name}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [str(BIN), self.role],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=self.log.open("ab"),
        )
        if self.port:
            self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.role} exited: {self.log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(self.base + "/readyz", timeout=1) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.1)
        raise AssertionError(f"{self.role} on {self.base} did not become ready")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=20)
            self.proc = None


def blob_files(data_dir: Path) -> list[Path]:
    """The blobs kept as files in a data dir (``<data dir>/blobs/<2 characters>/<key>``)."""
    return [p for p in (data_dir / "blobs").glob("??/*") if p.is_file()]


@pytest.fixture
def deployment(tmp_path: Path) -> Any:
    """Two API processes and two workers, each with its own data dir, on one database."""
    pg.require()
    with pg.fresh_schema("fc_shared") as schema:
        dirs = [tmp_path / name for name in ("api-1", "api-2", "worker-1", "worker-2")]
        ports = [free_port(), free_port()]
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("FOURCORNER_")},
            "FOURCORNER_DATABASE_URL": pg.URL,
            "FOURCORNER_DATABASE_SCHEMA": schema,
            "FOURCORNER_AT_REST_KEY": base64.b64encode(os.urandom(32)).decode(),
            # the access point and SMP the network is told of: the second API process
            "FOURCORNER_PUBLIC_URL": f"http://127.0.0.1:{ports[1]}",
            "FOURCORNER_HOST": "127.0.0.1",
            "FOURCORNER_LOG_LEVEL": "warning",
        }
        for data_dir in dirs:
            data_dir.mkdir(mode=0o700)
        ensure_test_pki(dirs[0])
        apis = [Process("serve", d, env, port) for d, port in zip(dirs[:2], ports, strict=True)]
        workers = [Process("worker", d, env) for d in dirs[2:]]
        started: list[Process] = []
        try:
            apis[0].start()  # makes the operator's records, and the token signing key
            started.append(apis[0])
            tokens = {
                who: subprocess.run(
                    [str(BIN), "token", "--email", f"{who}@example.com", "--name", who],
                    env=apis[0].env,
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout.strip()
                for who in ("alice", "bob")
            }
            for other in dirs[1:]:  # the same keys and certificates on every machine
                shutil.copytree(dirs[0] / "keys", other / "keys")
                shutil.copytree(dirs[0] / "pki", other / "pki")
            for process in [apis[1], *workers]:
                process.start()
                started.append(process)
            yield apis, workers, tokens, dirs
        finally:
            for process in reversed(started):
                process.stop()
        for process in started:
            assert "unhandled error" not in process.log.read_text(), process.log.read_text()


def wait_for(what: str, check: Any, within: float = 120.0) -> Any:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"not within {within:g} s: {what}")


def test_what_one_api_process_takes_in_is_read_through_the_other(deployment: Any) -> None:
    apis, _, tokens, dirs = deployment
    j = journey()
    # the same people through either process
    alice = [j.Api(api.base, tokens["alice"]) for api in apis]
    bob = [j.Api(api.base, tokens["bob"]) for api in apis]
    acme = j.organisation(alice[0], j.ACME)
    widgets = j.organisation(bob[1], j.WIDGETS)
    j.participant(alice[0], acme["id"], j.SENDER, "ACME AB")
    receiver = j.participant(bob[1], widgets["id"], j.RECEIVER, "Widgets AB")
    j.receives_invoices(bob[0], widgets["id"], receiver["id"])
    _, ap = j.test_services(alice[0], acme["id"])

    sent: dict[str, tuple[int, bytes]] = {}  # transaction id: (API process it went in by, SBD)
    invoice = (EXAMPLES / "invoice.sbd.xml").read_bytes()
    for n in range(4):
        through = n % 2
        sbd, _ = j.fresh_instance(invoice)
        accepted = alice[through].ok("POST", f"/orgs/{acme['id']}/transactions?ap={ap}", xml=sbd)
        sent[accepted["transactionId"]] = (through, sbd)

    def completed() -> bool:
        states = [
            alice[1 - through].ok("GET", f"/orgs/{acme['id']}/transactions/{tx}")
            for tx, (through, _) in sent.items()
        ]
        failed = [s for s in states if s["transactionStatus"] in ("FAILED", "REJECTED")]
        assert not failed, failed
        return all(
            s["transactionStatus"] == "COMPLETED" and s.get("mlsResponseCode") for s in states
        )

    wait_for("every invoice sent, its receipt and its status back", completed)

    # sent: each read through the other API process, its document and receipt included
    for tx, (through, sbd) in sent.items():
        other = alice[1 - through]
        base = f"/orgs/{acme['id']}/transactions/{tx}"
        assert other.ok("GET", f"{base}/business_document") == sbd
        artefacts = other.ok("GET", f"{base}/artefacts")["items"]
        assert {a["type"] for a in artefacts} >= {"BUSINESS_DOCUMENT", "TRANSACTION_RECEIPT"}
        for artefact in artefacts:
            for reader in alice:  # through both: the same bytes, of the recorded size
                content = raw(reader, f"{base}/artefacts/{artefact['id']}")
                assert len(content) == artefact["size"], artefact
                if artefact["type"] == "TRANSACTION_RECEIPT":
                    assert b"Receipt" in content

    # received (taken in by the second API process's access point): read through the first
    def all_received() -> list[dict[str, Any]] | None:
        page = bob[0].ok("GET", f"/orgs/{widgets['id']}/transactions/from_network")
        return page["items"] if len(page["items"]) == len(sent) else None

    received = wait_for("every invoice received", all_received)
    documents = set()
    for tx in received:
        base = f"/orgs/{widgets['id']}/transactions/{tx['id']}"
        document = bob[0].ok("GET", f"{base}/business_document")
        assert document == bob[1].ok("GET", f"{base}/business_document")
        documents.add(document)
        types = {a["type"] for a in bob[0].ok("GET", f"{base}/artefacts")["items"]}
        assert "TRANSACTION_RECEIPT" in types
    assert documents == {sbd for _, sbd in sent.values()}

    for data_dir in dirs:  # the database holds every blob; no data dir holds one
        assert blob_files(data_dir) == [], data_dir


def raw(api: Any, path: str) -> bytes:
    """The bytes of an answer, whatever its type (the journey's client decodes JSON)."""
    request = urllib.request.Request(api.base + path)
    request.add_header("Authorization", f"Bearer {api.token}")
    with urllib.request.urlopen(request, timeout=30) as answer:
        return answer.read()
