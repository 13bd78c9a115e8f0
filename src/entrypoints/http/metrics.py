"""``GET /metrics`` in the Prometheus text format, on a registry of our own.

Counters for totals and histograms for durations are counted from the events the service
logs (``application.telemetry``): requests by route and status with their latency (recorded by
the middleware), transactions reaching a final status by direction and outcome, AS4 messages
in and out by outcome, webhook delivery attempts by outcome, the duration of each sending
attempt and the time from intake to COMPLETED. Gauges are only for the current depth of the
work queues, read from storage at most once a second (``GAUGE_SECONDS``): scrapes in between
answer the last depths, so a flood of scrapes costs no more queries. The process and runtime
metrics are the standard ones; no ``_created`` series is exposed.

With ``FOURCORNER_METRICS_TOKEN`` set, a scrape must send ``Authorization: Bearer <token>``;
others are refused (401), and their failures count against the client's address in the same
throttle as every other credential (``throttle``)."""

from __future__ import annotations

import bisect
import hashlib
import hmac
import logging
import time
import weakref
from collections.abc import Iterator
from typing import cast

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
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from fourcorner.application import gauges, telemetry
from fourcorner.application.context import Context
from fourcorner.domain.errors import TooManyFailedAttempts, Unauthorised
from fourcorner.entrypoints.http.proxy import client_address
from fourcorner.entrypoints.http.routing import Reply, Req
from fourcorner.entrypoints.http.throttle import FailureTracker, address_key

disable_created_metrics()

_FINAL = ("COMPLETED", "FAILED", "REJECTED")
_SECONDS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
_INTAKE = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 14400, 86400)


GAUGE_SECONDS = 1.0


class Metrics:
    def __init__(self, token: str = "") -> None:
        # only the token's digest is kept, and compared in constant time
        self._token = hashlib.sha256(token.encode()).digest() if token else None
        self._depths: gauges.Gauges | None = None
        self._depths_until = 0.0
        self.registry = CollectorRegistry(auto_describe=True)
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self.http = RequestStats()
        self.registry.register(self.http)
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

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        self.http.observe(method, route, status, seconds)

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

    def admit(self, request: web.Request, throttle: FailureTracker) -> None:
        """Whether ``request`` may scrape: always without a token, else with it (401)."""
        if self._token is None:
            return
        counted = [address_key(client_address(request))]
        wait = throttle.retry_after(counted)
        if wait:
            raise TooManyFailedAttempts(retry_after=wait)
        # one Authorization header only: of two, a proxy in front may have checked the other
        [header, *more] = request.headers.getall("Authorization", ("",))
        scheme, _, sent = header.partition(" ")
        digest = hashlib.sha256(sent.strip().encode("utf-8", "surrogatepass")).digest()
        wrong = scheme.lower() != "bearer" or not hmac.compare_digest(digest, self._token)
        if wrong or more:
            throttle.failed(counted)
            raise Unauthorised(reason="the metrics need 'Authorization: Bearer <metrics token>'")

    async def depths(self, ctx: Context) -> gauges.Gauges:
        """The queues' depths, read again when the last reading is a second old."""
        now = time.monotonic()
        if self._depths is None or now >= self._depths_until:
            self._depths = await gauges.read(ctx)
            self._depths_until = time.monotonic() + GAUGE_SECONDS
        return self._depths


_HTTP_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10)


class RequestStats(Collector):
    """HTTP requests by method, route and status, and their latency by method and route.

    Counted in plain dicts, since only the event loop's thread observes requests; turned into
    the Prometheus families (``fourcorner_http_requests``, a counter, and
    ``fourcorner_http_request_duration_seconds``, a histogram) when scraped.
    ``prometheus_client``'s own metrics take a lock on every call, which was a tenth of a
    cached read's time."""

    def __init__(self, buckets: tuple[float, ...] = _HTTP_BUCKETS) -> None:
        self._bounds = buckets
        # (method, route, status) -> [count per bucket (not cumulative) ..., above the last;
        # sum]: one lookup a request; the counts by status are the buckets' sums, the latency
        # by method and route the cells of its statuses added up, when scraped
        self._cells: dict[tuple[str, str, int], list[float]] = {}

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        cells = self._cells.get((method, route, status))
        if cells is None:
            cells = self._cells[(method, route, status)] = [0.0] * (len(self._bounds) + 2)
        cells[bisect.bisect_left(self._bounds, seconds)] += 1
        cells[-1] += seconds

    def collect(self) -> Iterator[Metric]:
        requests = CounterMetricFamily(
            "fourcorner_http_requests", "HTTP requests", labels=["method", "route", "status"]
        )
        by_route: dict[tuple[str, str], list[float]] = {}
        for (method, route, status), cells in list(self._cells.items()):
            requests.add_metric([method, route, str(status)], int(sum(cells[:-1])))
            total = by_route.setdefault((method, route), [0.0] * len(cells))
            for i, value in enumerate(cells):
                total[i] += value
        yield requests
        latency = HistogramMetricFamily(
            "fourcorner_http_request_duration_seconds",
            "HTTP request latency",
            labels=["method", "route"],
        )
        for (method, route), cells in by_route.items():
            running, buckets = 0.0, []
            for bound, count in zip((*map(_bound, self._bounds), "+Inf"), cells[:-1], strict=True):
                running += count
                buckets.append((bound, running))
            latency.add_metric([method, route], buckets, cells[-1])
        yield latency


def _bound(value: float) -> str:
    return cast(str, floatToGoString(value))


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
    req: Req,
    ctx: Context = Provide["context"],
    metrics: Metrics = Provide["metrics"],
    throttle: FailureTracker = Provide["auth_throttle"],
) -> Reply:
    metrics.admit(req.raw, throttle)
    depths = await metrics.depths(ctx)
    metrics.queue.labels("webhook_deliveries").set(depths.deliveries)
    metrics.queue.labels("transactions_to_send").set(depths.transactions)
    body = generate_latest(metrics.registry)
    return Reply(200, web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST}))
