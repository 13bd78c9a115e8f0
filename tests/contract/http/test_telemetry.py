"""What the service tells its operator over a scripted journey: one log record per event with
a stable ``event`` name and the fields that explain it, and the Prometheus metrics counted from
those events (counters, histograms, queue gauges, process metrics, no ``_created`` series)."""

from __future__ import annotations

import json
import logging
import shutil
from typing import Any

from aiohttp import web
from prometheus_client.parser import text_string_to_metric_families

from fourcorner.entrypoints.commands.migrate import apply_migrations
from fourcorner.entrypoints.container import build_container
from fourcorner.entrypoints.http.app import json_log_formatter
from sbd_factory import make_sbd

from .conftest import free_port, settings_for
from .test_as4_endpoint import message, post
from .test_participants import ALICE, BOB, gln
from .test_send_retry import LosingProxy
from .test_transactions import receiving_participant, until


def events(caplog: Any, name: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if getattr(r, "event", None) == name]


async def _journey(start_api: Any, aiohttp_server: Any) -> tuple[Any, dict[str, Any]]:
    """A document sent whose first answer is lost (retried, completed, received), one sent to
    a receiver nobody serves (the lookup fails), an inbound message refused, and a webhook
    whose target is down (its attempts fail, then it gives up)."""
    proxy = LosingProxy()
    app = web.Application()
    app.router.add_post("/as4/{org}/{ap}", proxy.handle)
    port = free_port()
    await aiohttp_server(app, port=port)
    api = await start_api(
        "memory",
        workers=True,
        public=True,
        webhook_allow_private_targets=True,
        webhook_retry_delays="0.05,0.05",
        send_retry_delays="0.2",
        ap_host=f"http://127.0.0.1:{port}/as4",
    )
    proxy.target = str(api.client.make_url("")).rstrip("/")
    a = await api.org(ALICE)
    b = await api.org(BOB, legal_id="5560360793")
    sender, receiver, nobody = f"0088:{gln(72)}", f"0088:{gln(73)}", f"0088:{gln(74)}"
    await receiving_participant(api, a, sender, ALICE)
    await receiving_participant(api, b, receiver, BOB)
    down = f"http://127.0.0.1:{free_port()}/hook"
    status, hook = await api.call(
        "POST",
        f"/orgs/{a['id']}/webhooks",
        as_=ALICE,
        json={"url": down, "events": ["transaction.sent", "transaction.send_failed"]},
    )
    assert status == 201, hook
    _, aps = await api.call("GET", f"/orgs/{a['id']}/aps/alltouse", as_=ALICE)
    ids = {}
    for name, to in (("sent", receiver), ("unserved", nobody)):
        status, body = await api.call(
            "POST",
            f"/orgs/{a['id']}/transactions?ap={aps['items'][0]['id']}",
            as_=ALICE,
            data=make_sbd(sender=sender, receiver=to),
            headers={"Content-Type": "application/xml"},
        )
        assert status == 202, body
        ids[name] = body["transactionId"]

    async def finished() -> bool:
        for tx_id in ids.values():
            _, tx = await api.call("GET", f"/orgs/{a['id']}/transactions/{tx_id}", as_=ALICE)
            if tx["transactionStatus"] not in ("COMPLETED", "FAILED"):
                return False
        return True

    await until(finished)
    # an inbound message whose envelope does not match its AS4 header is refused
    _, bob_aps = await api.call("GET", f"/orgs/{b['id']}/aps/alltouse", as_=BOB)
    path = "/" + bob_aps["items"][0]["apUrl"].split("/", 3)[3]
    bad = message(api, make_sbd(sender=sender, receiver=receiver), sender=sender, receiver=nobody)
    status, _ = await post(api, path, bad)
    assert status == 200

    async def given_up() -> bool:
        _, page = await api.call("GET", f"/orgs/{a['id']}/webhooks/events", as_=ALICE)
        return bool(page["items"]) and all(e["status"] == "FAILED" for e in page["items"])

    await until(given_up)
    return api, {"a": a, "b": b, "hook": hook, "ids": ids, "nobody": nobody}


async def test_a_journey_logs_every_event_and_counts_it(start_api, aiohttp_server, caplog):
    caplog.set_level(logging.INFO)
    api, j = await _journey(start_api, aiohttp_server)
    a, b, ids = j["a"], j["b"], j["ids"]

    # every transaction status change: id, organisation, status, error code
    changes = [
        (r.transaction_id, r.org_id, r.direction, r.status, r.error_code)
        for r in events(caplog, "transaction.status")
    ]
    sent, unserved = ids["sent"], ids["unserved"]
    assert (sent, a["id"], "TO_NETWORK", "UNPROCESSED", None) in changes
    assert (sent, a["id"], "TO_NETWORK", "PROCESSING", None) in changes
    assert (sent, a["id"], "TO_NETWORK", "COMPLETED", None) in changes
    failed = [c for c in changes if c[0] == unserved and c[3] == "FAILED"]
    assert len(failed) == 1 and failed[0][4].startswith("TXE-")
    assert any(c[1] == b["id"] and c[2:4] == ("FROM_NETWORK", "COMPLETED") for c in changes)
    completed = [r for r in events(caplog, "transaction.status") if r.status == "COMPLETED"]
    assert any(getattr(r, "seconds_since_intake", -1) >= 0 for r in completed)

    # the failed attempts with their cause, the lookup that failed, the refused message
    attempts = [(r.transaction_id, r.error_code, r.final) for r in events(caplog, "send.failed")]
    assert any(t == sent and not final for t, _, final in attempts)
    assert any(t == unserved and final for t, _, final in attempts)
    assert all(r.cause for r in events(caplog, "send.failed"))
    (lookup,) = events(caplog, "smp.lookup_failed")
    assert lookup.transaction_id == unserved and lookup.receiver == j["nobody"] and lookup.reason
    assert lookup.problem == "NOT_REGISTERED"  # the value, not the enum's repr
    outcomes = [r.outcome for r in events(caplog, "as4.sent") if r.transaction_id == sent]
    assert outcomes[-1] == "ok" and outcomes[0].startswith("TXE-")
    assert any(r.org_id == b["id"] for r in events(caplog, "as4.received"))
    (refused,) = [r for r in events(caplog, "as4.refused") if r.ebms_code == "EBMS:0003"]
    assert refused.ebms_code == "EBMS:0003" and refused.org_id  # the access point's
    assert refused.sender and "inconsistent" in refused.reason.lower()

    # the webhook's failed attempts, then it gave up
    hooks = [r for r in events(caplog, "webhook.failed") if r.webhook_id == j["hook"]["id"]]
    assert hooks and all(r.cause for r in hooks)
    assert [r.final for r in hooks][-1] is True

    # request lines: status, error code, organisation, caller, duration
    requests = events(caplog, "http.request")
    created = [r for r in requests if r.route == "/orgs/{orgId}/transactions" and r.status == 202]
    assert created and created[0].org_id == a["id"] and created[0].caller_kind == "user"
    assert created[0].caller_id and created[0].duration_ms >= 0 and created[0].error_code is None
    status, _ = await api.call("GET", f"/orgs/{b['id']}", as_=ALICE)
    assert status == 403
    refusal = events(caplog, "http.request")[-1]
    assert refusal.status == 403 and refusal.error_code and refusal.org_id == b["id"]

    # every line is one JSON object with an event name
    formatter = json_log_formatter()
    for record in caplog.records:
        line = formatter.format(record)
        assert "\n" not in line and json.loads(line)["event"]

    # the metrics, counted from the same events
    text = await (await api.client.get("/metrics")).text()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    expected = {
        "fourcorner_http_requests": "counter",
        "fourcorner_http_request_duration_seconds": "histogram",
        "fourcorner_transactions": "counter",
        "fourcorner_as4_messages": "counter",
        "fourcorner_webhook_attempts": "counter",
        "fourcorner_as4_send_duration_seconds": "histogram",
        "fourcorner_transaction_completion_seconds": "histogram",
        "fourcorner_queue_depth": "gauge",
        "process_cpu_seconds": "counter",
        "process_resident_memory_bytes": "gauge",
        "python_info": "gauge",
        "python_gc_collections": "counter",
    }
    assert {name: families[name].type for name in expected} == expected
    gauges = {n for n, f in families.items() if f.type == "gauge" and n.startswith("fourcorner")}
    assert gauges == {"fourcorner_queue_depth"}
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in families.values()
        for s in f.samples
    }
    assert not [name for name, _ in samples if name.endswith("_created")]
    assert "_created" not in text

    def value(name: str, **labels: str) -> float:
        return samples.get((name, tuple(sorted(labels.items()))), 0.0)

    total = "fourcorner_transactions_total"
    assert value(total, direction="TO_NETWORK", outcome="COMPLETED") >= 1
    assert value(total, direction="TO_NETWORK", outcome="FAILED") >= 1
    assert value(total, direction="FROM_NETWORK", outcome="COMPLETED") >= 1
    assert value("fourcorner_as4_messages_total", direction="out", outcome="ok") >= 1
    assert value("fourcorner_as4_messages_total", direction="in", outcome="accepted") >= 1
    assert value("fourcorner_as4_messages_total", direction="in", outcome="refused") >= 1
    assert value("fourcorner_webhook_attempts_total", outcome="given_up") >= 1
    assert value("fourcorner_as4_send_duration_seconds_count") >= 2
    completion = "fourcorner_transaction_completion_seconds_count"
    assert value(completion, direction="TO_NETWORK") >= 1
    assert value("fourcorner_queue_depth", queue="transactions_to_send") == 0


async def test_applied_migrations_are_logged(tmp_path, shared_pki, caplog):
    caplog.set_level(logging.INFO)
    shutil.copytree(shared_pki, tmp_path / "pki")
    container = build_container(settings_for("sqlite", tmp_path))
    await apply_migrations(container)  # then once more at the next start: nothing more logged
    await apply_migrations(build_container(settings_for("sqlite", tmp_path)))
    labels = [r.migration for r in events(caplog, "migration.applied")]
    assert labels and labels == sorted(set(labels))  # each once, in order
    assert labels[0].startswith("0001_")
