"""``GET /metrics`` in the Prometheus text format: requests by route and status with latency
histograms (recorded by the middleware), and figures read from storage at each scrape."""

from __future__ import annotations

from aiohttp import web
from dependency_injector.wiring import Provide
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from application import gauges
from application.context import Context
from entrypoints.http.routing import Reply, Req


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
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
        self.transactions = Gauge(
            "fourcorner_transactions",
            "Transactions by direction and status",
            ["direction", "status"],
            registry=self.registry,
        )
        self.deliveries = Gauge(
            "fourcorner_webhook_deliveries",
            "Webhook deliveries by outcome",
            ["status"],
            registry=self.registry,
        )
        self.queue = Gauge(
            "fourcorner_queue_depth",
            "Work waiting in the outboxes",
            ["queue"],
            registry=self.registry,
        )

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


async def scrape(
    req: Req, ctx: Context = Provide["context"], metrics: Metrics = Provide["metrics"]
) -> Reply:
    figures = await gauges.read(ctx)
    for (direction, status), count in figures.transactions.items():
        metrics.transactions.labels(direction, status).set(count)
    for status, count in figures.deliveries.items():
        metrics.deliveries.labels(status).set(count)
    metrics.queue.labels("webhook_deliveries").set(figures.deliveries.get("PENDING", 0))
    metrics.queue.labels("transactions_to_send").set(
        figures.transactions.get(("TO_NETWORK", "UNPROCESSED"), 0)
        + figures.transactions.get(("TO_NETWORK", "PROCESSING"), 0)
    )
    body = generate_latest(metrics.registry)
    return Reply(200, web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST}))
