"""The deployment of "Several processes": an API process (``fourcorner serve``, workers off)
and a worker (``fourcorner worker``) with ``FOURCORNER_WORKER_PORT``. The worker answers
``/healthz``, ``/readyz`` and ``/metrics`` (with the metrics token) on its port, and its
metrics count the sends it makes, which the API process's never see: after an invoice is sent,
the worker's ``fourcorner_as4_messages_total{direction="out"}`` has gone up, while the API
process counts the messages it took in and no send."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

import pg
from fourcorner.adapters.pki import ensure_test_pki

from .test_serve import BIN, free_port
from .test_shared_blobs import EXAMPLES, Process, journey, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.postgres]
TOKEN = "metrics-token-0123456789"


def get(url: str, token: str = "") -> tuple[int, str]:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def samples(base: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """The process's metrics: (sample name, labels) → value."""
    status, text = get(base + "/metrics", TOKEN)
    assert status == 200, text
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def metric(found: dict[Any, float], name: str, labels: set[tuple[str, str]] | None = None) -> float:
    return found.get((name, frozenset(labels or ())), 0.0)


def as4(found: dict[Any, float], direction: str, outcome: str) -> float:
    labels = {("direction", direction), ("outcome", outcome)}
    return metric(found, "fourcorner_as4_messages_total", labels)


def test_the_worker_serves_its_probes_and_the_metrics_of_its_sends(tmp_path: Path) -> None:
    pg.require()
    with pg.fresh_schema("fc_wport") as schema:
        api_dir, worker_dir = tmp_path / "api", tmp_path / "worker"
        api_port, worker_port = free_port(), free_port()
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("FOURCORNER_")},
            "FOURCORNER_DATABASE_URL": pg.URL,
            "FOURCORNER_DATABASE_SCHEMA": schema,
            "FOURCORNER_AT_REST_KEY": base64.b64encode(os.urandom(32)).decode(),
            "FOURCORNER_PUBLIC_URL": f"http://127.0.0.1:{api_port}",
            "FOURCORNER_METRICS_TOKEN": TOKEN,
            "FOURCORNER_LOG_LEVEL": "warning",
        }
        for data_dir in (api_dir, worker_dir):
            data_dir.mkdir(mode=0o700)
        ensure_test_pki(api_dir)
        api = Process("serve", api_dir, env, api_port)
        worker = Process("worker", worker_dir, env | {"FOURCORNER_WORKER_PORT": str(worker_port)})
        base = f"http://127.0.0.1:{worker_port}"
        try:
            api.start()
            token = subprocess.run(
                [str(BIN), "token", "--email", "alice@example.com", "--name", "Alice"],
                env=api.env,
                check=True,
                capture_output=True,
                text=True,
            ).stdout.strip()
            shutil.copytree(api_dir / "keys", worker_dir / "keys")
            shutil.copytree(api_dir / "pki", worker_dir / "pki")
            worker.start()

            def ready() -> bool:
                assert worker.proc is not None and worker.proc.poll() is None, worker.log
                try:
                    return get(base + "/readyz")[0] == 200
                except OSError:
                    return False

            wait_for("the worker's /readyz answering 200", ready, within=60)
            status, body = get(base + "/healthz")
            assert (status, json.loads(body)) == (200, {"status": "ok"})
            assert get(base + "/metrics")[0] == 401  # the token, as on serve
            assert get(base + "/openapi.json")[0] == 404  # nothing but the three
            assert as4(samples(base), "out", "ok") == 0

            j = journey()
            alice = j.Api(api.base, token)
            acme = j.organisation(alice, j.ACME)
            widgets = j.organisation(alice, j.WIDGETS)
            j.participant(alice, acme["id"], j.SENDER, "ACME AB")
            receiver = j.participant(alice, widgets["id"], j.RECEIVER, "Widgets AB")
            j.receives_invoices(alice, widgets["id"], receiver["id"])
            _, ap = j.test_services(alice, acme["id"])
            sbd, _ = j.fresh_instance((EXAMPLES / "invoice.sbd.xml").read_bytes())
            tx = alice.ok("POST", f"/orgs/{acme['id']}/transactions?ap={ap}", xml=sbd)

            def completed() -> bool:
                state = alice.ok("GET", f"/orgs/{acme['id']}/transactions/{tx['transactionId']}")
                assert state["transactionStatus"] not in ("FAILED", "REJECTED"), state
                return bool(state["transactionStatus"] == "COMPLETED")

            wait_for("the invoice sent", completed)
            # the worker sent the invoice and, for the receiver, its status back: its metrics
            # count the sends and the sent document's completion; the API process's count the
            # messages it took in, and no send
            counted = samples(base)
            assert as4(counted, "out", "ok") >= 1
            assert metric(counted, "fourcorner_as4_send_duration_seconds_count") >= 1
            completed_here = {("direction", "TO_NETWORK"), ("outcome", "COMPLETED")}
            assert metric(counted, "fourcorner_transactions_total", completed_here) == 1
            sent = {("direction", "TO_NETWORK")}
            assert metric(counted, "fourcorner_transaction_completion_seconds_count", sent) == 1
            api_counted = samples(api.base)
            assert as4(api_counted, "in", "accepted") >= 1
            assert as4(api_counted, "out", "ok") == 0
        finally:
            worker.stop()
            api.stop()
        for process in (api, worker):
            assert "unhandled error" not in process.log.read_text(), process.log.read_text()
