"""Upgrading a database to migration 0023: each pending delivery stored before deliveries held
their host gets the host and port its webhook's URL names, as the service spells them
(``host_text(host_of(url))``), in its record and in the column the claims leave full hosts
out by; the others (delivered, of a webhook deleted) hold none. The backfill reads a URL as
``host_of`` does, whatever the URL's user name, capitals, port and trailing dot."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import sqlite3
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fourcorner.adapters.sql import migrations
from fourcorner.adapters.sql.codec import make_converter
from fourcorner.adapters.sqlite.migration import SqliteMigrations
from fourcorner.application.repositories import Deliveries
from fourcorner.domain import clock
from fourcorner.domain.webhook import Delivery, DeliveryStatus
from fourcorner.domain.webhook_target import host_of, host_text
from upgrade import Rows, Upgraded

UPGRADE = 23  # the migration under test
NOW = datetime(2026, 3, 1, tzinfo=UTC)
ORG = uuid.UUID(int=7)
INSERT_WEBHOOK = (
    'INSERT INTO "webhooks" ("id", "url", "is_enabled", "created_at", "org_id", "search_text", '
    '"data") VALUES ({})'
)
INSERT_DELIVERY = (
    'INSERT INTO "deliveries" ("id", "event_id", "webhook_id", "status", "next_attempt_at", '
    '"lease_until", "created_at", "org_id", "search_text", "data") VALUES ({})'
)
URLS = [
    "https://hooks.example.com/in",
    "https://user:secret@Hooks.Example.COM./in?x=1#y",
    "HTTPS://a@b@hooks.example.com:0443/in@x",
    "http://hooks.example.com/",
    "http://hooks.example.com:/in",
    "https://hooks.example.com:8443",
    "https://203.0.113.9:9000/in",
    "https://[2001:DB8::1]/in",
    "https://[2001:db8::2]:8443/in?a=b:c",
    "https://relay.example.net?token=a/b",
    # ports check_url refused only later: past 65535 (host_of's -1), past 64 bits, zero-padded
    "https://hooks.example.com:65536/in",
    "https://hooks.example.com:99999999999999999999999/in",
    "https://[2001:db8::3]:18446744073709551616/in",
    "https://hooks.example.com:0000000000000000000008443/in",
]
_CONV = make_converter()


def webhook_row(hook_id: uuid.UUID, url: str) -> tuple[str, tuple[object, ...]]:
    data = {"id": str(hook_id), "org_id": str(ORG), "url": url, "events": ["webhook.test"]}
    values = (str(hook_id), url, 1, clock.sortable(NOW), str(ORG), "", json.dumps(data))
    return INSERT_WEBHOOK, values


def delivery_row(d: Delivery, *, compact: bool) -> tuple[str, tuple[object, ...]]:
    """The row as the code before 0023 wrote it: no host in the record (its JSON as orjson
    wrote it, ``compact``, or as ``json`` did)."""
    data = _CONV.unstructure(d)
    data.pop("host")
    text = json.dumps(data, separators=(",", ":")) if compact else json.dumps(data)
    values = (
        *(str(d.id), str(d.event_id), str(d.webhook_id), d.status.value),
        *(clock.sortable(d.next_attempt_at), clock.sortable(d.lease_until)),
        *(clock.sortable(d.created_at), str(d.org_id), "", text),
    )
    return INSERT_DELIVERY, values


def delivery(n: int, hook_id: uuid.UUID, status: DeliveryStatus) -> Delivery:
    at = NOW + timedelta(seconds=n)
    return Delivery(uuid.UUID(int=1000 + n), uuid.UUID(int=2000 + n), hook_id, ORG, at, at, status)


async def test_the_due_deliveries_stored_before_hold_their_webhooks_host(
    upgraded: Upgraded,
) -> None:
    hooks = [uuid.UUID(int=100 + n) for n in range(len(URLS))]
    pending = [delivery(n, h, DeliveryStatus.PENDING) for n, h in enumerate(hooks)]
    delivered = delivery(50, hooks[0], DeliveryStatus.DELIVERED)
    orphan = delivery(51, uuid.UUID(int=99), DeliveryStatus.PENDING)  # its webhook deleted
    rows: Rows = [
        *(webhook_row(h, url) for h, url in zip(hooks, URLS, strict=True)),
        *(delivery_row(d, compact=n % 2 == 0) for n, d in enumerate([*pending, delivered])),
        delivery_row(orphan, compact=True),
    ]
    expected = {d.id: host_text(host_of(url)) for d, url in zip(pending, URLS, strict=True)}
    async with upgraded(UPGRADE, rows) as storage:
        async with storage.unit_of_work() as uow:
            found = {
                d.id: d
                for d in await Deliveries(uow).of_events(
                    [d.event_id for d in [*pending, delivered, orphan]]
                )
            }
        assert {d.id: found[d.id].host for d in pending} == expected
        assert all(found[d.id] == attrs.evolve(d, host=expected[d.id]) for d in pending)
        assert found[delivered.id] == delivered and found[orphan.id] == orphan  # hold none
        later = NOW + timedelta(hours=1)
        for host in set(expected.values()):  # the column holds it: the claims leave it out
            async with storage.unit_of_work() as uow:
                claimed = await Deliveries(uow).claim_due(later, 50, skip_hosts=[host])
            assert {d.id for d in claimed} == {
                orphan.id,
                *(i for i, h in expected.items() if h != host),
            }


# --- the backfill's reading of a URL, as host_of reads it ------------------------------------

_LABEL = st.from_regex(r"[A-Za-z0-9]([A-Za-z0-9-]{0,10}[A-Za-z0-9])?", fullmatch=True)
_NAME = st.builds(
    lambda labels, top, dot: ".".join([*labels, top]) + ("." if dot else ""),
    st.lists(_LABEL, min_size=0, max_size=3),
    st.from_regex(r"[A-Za-z][A-Za-z0-9]{1,8}", fullmatch=True),
    st.booleans(),
)
_IPV4 = st.builds(lambda n: str(ipaddress.IPv4Address(n)), st.integers(0, 2**32 - 1))
_IPV6 = (
    st.integers(2**33, 2**128 - 1)
    .map(ipaddress.IPv6Address)
    .filter(lambda ip: ip.ipv4_mapped is None)
    .flatmap(lambda ip: st.sampled_from([str(ip), str(ip).upper()]))
    .map(lambda text: f"[{text}]")
)
_PORT = st.one_of(
    st.just(""),
    st.just(":"),
    st.integers(0, 65535).flatmap(lambda p: st.sampled_from([f":{p}", f":0{p}"])),
    # what check_url refused only later: past 65535 (host_of's -1), zero-padded past 5 digits
    st.builds(
        lambda p, zeros: f":{'0' * zeros}{p}",
        st.integers(0, 65535) | st.integers(65536, 10**30),
        st.integers(0, 20),
    ),
)
_USER = st.one_of(st.just(""), st.from_regex(r"[a-z0-9:@]{1,8}@", fullmatch=True))
_REST = st.sampled_from(["", "/", "/in", "/a@b:c", "?q=a/b:c", "#f@g", "/x?y#z"])
URLS_GIVEN = st.builds(
    lambda scheme, user, host, port, rest: f"{scheme}://{user}{host}{port}{rest}",
    st.sampled_from(["https", "http", "HTTPS", "Http"]),
    _USER,
    st.one_of(_NAME, _IPV4, _IPV6),
    _PORT,
    _REST,
)


@pytest.fixture(scope="module")
def before_hosts() -> Iterator[sqlite3.Connection]:
    """A SQLite database as migration 0023 finds it (the migrations before applied)."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    every = migrations.load("sqlite")
    asyncio.run(
        migrations.apply_pending(SqliteMigrations(conn), [m for m in every if m.version < UPGRADE])
    )
    conn.execute('ALTER TABLE "deliveries" ADD COLUMN "host" TEXT')
    yield conn
    conn.close()


def _backfill(dialect: str) -> str:
    """0023's statement that gives the pending deliveries their hosts."""
    (migration,) = [m for m in migrations.load(dialect) if m.version == UPGRADE]
    return next(s for s in migration.sql.split(";\n") if s.lstrip().startswith("WITH"))


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(URLS_GIVEN)
def test_the_backfill_reads_a_url_as_the_service_does(
    before_hosts: sqlite3.Connection, url: str
) -> None:
    """SQLite's backfill (no regular expressions: the URL cut at its delimiters) gives every
    URL of an ASCII name, an IPv4 address or a compressed IPv6 literal the host ``host_of``
    gives, whatever its user name, capitals, port and trailing dot."""
    conn = before_hosts
    conn.execute('DELETE FROM "webhooks"')
    conn.execute('DELETE FROM "deliveries"')
    hook_id = uuid.UUID(int=1)
    for statement, values in [
        webhook_row(hook_id, url),
        delivery_row(delivery(0, hook_id, DeliveryStatus.PENDING), compact=True),
    ]:
        conn.execute(statement.format(", ".join("?" * len(values))), values)
    conn.execute(_backfill("sqlite"))
    (row,) = conn.execute('SELECT "host", "data" FROM "deliveries"').fetchall()
    assert row[0] == host_text(host_of(url))
    assert _CONV.loads(row[1], Delivery).host == row[0]
