"""The requests counted by method, route and status, and their latency by method and route,
as scraped: the cells are kept per status, and a route's latency adds its statuses up."""

from __future__ import annotations

from fourcorner.entrypoints.http.metrics import RequestStats


def _samples(stats: RequestStats) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in stats.collect()
        for s in family.samples
    }


def test_counts_by_status_and_latency_by_route() -> None:
    stats = RequestStats(buckets=(0.01, 0.1))
    for status, seconds in ((200, 0.005), (200, 0.05), (404, 0.5), (200, 0.005)):
        stats.observe("GET", "/orgs/{orgId}", status, seconds)
    stats.observe("HEAD", "/orgs/{orgId}", 200, 0.005)
    got = _samples(stats)
    route = (("method", "GET"), ("route", "/orgs/{orgId}"))
    assert got["fourcorner_http_requests_total", (*route, ("status", "200"))] == 3
    assert got["fourcorner_http_requests_total", (*route, ("status", "404"))] == 1
    head = (("method", "HEAD"), ("route", "/orgs/{orgId}"), ("status", "200"))
    assert got["fourcorner_http_requests_total", head] == 1
    buckets = {
        le: got["fourcorner_http_request_duration_seconds_bucket", (("le", le), *route)]
        for le in ("0.01", "0.1", "+Inf")
    }
    assert buckets == {"0.01": 2, "0.1": 3, "+Inf": 4}
    assert got["fourcorner_http_request_duration_seconds_count", route] == 4
    assert abs(got["fourcorner_http_request_duration_seconds_sum", route] - 0.56) < 1e-9
