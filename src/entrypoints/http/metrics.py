"""``GET /metrics`` in the Prometheus text format, on a registry of our own.

Counters for totals and histograms for durations are counted from the events the service
logs (``application.telemetry``): requests by route and status with their latency (recorded by
the middleware), transactions reaching a final status by direction and outcome, AS4 messages
in and out by outcome, webhook delivery attempts by outcome, the duration of each sending
attempt and the time from intake to COMPLETED. Gauges are only for the current depth of the
work queues, read from storage at each scrape. The process and runtime metrics are the
standard ones; no ``_created`` series is exposed."""

from __future__ import annotations

import logging
import weakref

from aiohttp import web
from dependency_injector.wiring import Provide
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from fourcorner.application import gauges, telemetry
from fourcorner.application.context import Context
from fourcorner.entrypoints.http.routing import Reply, Req

disable_created_metrics()

_FINAL = ("COMPLETED", "FAILED", "REJECTED")
_SECONDS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
_INTAKE = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 14400, 86400)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self.requests = Counter(
            "fourcorner_http_requests",
            "HTTP requests",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "fourcorner_http_request_duration_seconds",
            "HTTP request latency",
            ["method", "route"],
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10),
            registry=self.registry,
        )
        self.transactions = Counter(
            "fourcorner_transactions",
            "Documents that reached a final status, by direction and outcome",
            ["direction", "outcome"],
            registry=self.registry,
        )
        self.as4_messages = Counter(
            "fourcorner_as4_messages",
            "AS4 messages sent (out: ok or the TXE code) and received (in: accepted, refused)",
            ["direction", "outcome"],
            registry=self.registry,
        )
        self.webhook_attempts = Counter(
            "fourcorner_webhook_attempts",
            "Webhook delivery attempts by outcome (delivered, failed, given_up)",
            ["outcome"],
            registry=self.registry,
        )
        self.send_duration = Histogram(
            "fourcorner_as4_send_duration_seconds",
            "Duration of one AS4 sending attempt",
            buckets=_SECONDS,
            registry=self.registry,
        )
        self.completion = Histogram(
            "fourcorner_transaction_completion_seconds",
            "Time from a document's intake to COMPLETED, by direction",
            ["direction"],
            buckets=_INTAKE,
            registry=self.registry,
        )
        self.queue = Gauge(
            "fourcorner_queue_depth",
            "Work waiting in the outboxes",
            ["queue"],
            registry=self.registry,
        )
        _LIVE.add(self)

        # the labelled children, looked up once each: ``labels()`` takes a lock per call
        self._children: dict[tuple[str, str, int], tuple[Counter, Histogram]] = {}

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        key = (method, route, status)
        children = self._children.get(key)
        if children is None:
            children = self._children[key] = (
                self.requests.labels(method, route, str(status)),
                self.latency.labels(method, route),
            )
        children[0].inc()
        children[1].observe(seconds)

    def count(self, record: logging.LogRecord) -> None:
        """Count one event of ``application.telemetry``."""
        event, fields = getattr(record, "event", None), record.__dict__
        if event == "transaction.status":
            if fields["kind"] != "DOCUMENT" or fields["status"] not in _FINAL:
                return
            self.transactions.labels(fields["direction"], fields["status"]).inc()
            if "seconds_since_intake" in fields:
                self.completion.labels(fields["direction"]).observe(fields["seconds_since_intake"])
        elif event == "as4.sent":
            self.as4_messages.labels("out", fields["outcome"]).inc()
            self.send_duration.observe(fields["seconds"])
        elif event == "as4.received":
            self.as4_messages.labels("in", "accepted").inc()
        elif event == "as4.refused":
            self.as4_messages.labels("in", "refused").inc()
        elif event == "webhook.attempt":
            self.webhook_attempts.labels(fields["outcome"]).inc()


# every Metrics of the process counts the events (one per service; tests build several)
_LIVE: weakref.WeakSet[Metrics] = weakref.WeakSet()


class _Counting(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        try:
            for metrics in list(_LIVE):
                metrics.count(record)
        except Exception:
            self.handleError(record)  # a miscounted event never stops the work it reports


telemetry.log.addHandler(_Counting())


async def scrape(
    req: Req, ctx: Context = Provide["context"], metrics: Metrics = Provide["metrics"]
) -> Reply:
    depths = await gauges.read(ctx)
    metrics.queue.labels("webhook_deliveries").set(depths.deliveries)
    metrics.queue.labels("transactions_to_send").set(depths.transactions)
    body = generate_latest(metrics.registry)
    return Reply(200, web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST}))
